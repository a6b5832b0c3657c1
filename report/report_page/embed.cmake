# embed.cmake — writes report_assets.c: the page's template, CSS and JS as NUL-terminated C
# strings (report.h: report_page_template, report_page_css, report_page_js).
# Usage: cmake -DDIR=<this folder> -DOUT=<file.c> -P embed.cmake
set(text "/* Generated from report/report_page/ by embed.cmake: do not edit. */\n")
string(APPEND text "#include \"report/report.h\"\n")
foreach(entry "template=report.html" "css=report.css" "js=report.js")
  string(REPLACE "=" ";" entry "${entry}")
  list(GET entry 0 name)
  list(GET entry 1 file)
  file(READ "${DIR}/${file}" hex HEX)
  string(REGEX REPLACE "([0-9a-f][0-9a-f])" "0x\\1," hex "${hex}")
  string(REPEAT "0x..," 16 row)
  string(REGEX REPLACE "(${row})" "\\1\n" hex "${hex}")
  string(APPEND text "\n/* ${file} */\nconst char report_page_${name}[] = {\n${hex}0x00};\n")
endforeach()
# Rewrite only on change, so that an unchanged page does not recompile.
file(WRITE "${OUT}.tmp" "${text}")
file(COPY_FILE "${OUT}.tmp" "${OUT}" ONLY_IF_DIFFERENT)
file(REMOVE "${OUT}.tmp")
