# The report page: report.html (template), report.css and report.js are ordinary files here and
# are embedded into `heaplens` as C strings at build time (embed.cmake -> report_assets.c).
# Included by report/CMakeLists.txt before add_library.
set(HEAPLENS_REPORT_PAGE_DIR ${CMAKE_CURRENT_SOURCE_DIR}/report_page)
add_custom_command(
  OUTPUT ${CMAKE_CURRENT_BINARY_DIR}/report_assets.c
  COMMAND ${CMAKE_COMMAND} -DDIR=${HEAPLENS_REPORT_PAGE_DIR}
          -DOUT=${CMAKE_CURRENT_BINARY_DIR}/report_assets.c -P ${HEAPLENS_REPORT_PAGE_DIR}/embed.cmake
  DEPENDS ${HEAPLENS_REPORT_PAGE_DIR}/embed.cmake ${HEAPLENS_REPORT_PAGE_DIR}/report.html
          ${HEAPLENS_REPORT_PAGE_DIR}/report.css ${HEAPLENS_REPORT_PAGE_DIR}/report.js
  COMMENT "Embedding the report page"
  VERBATIM)
list(APPEND HEAPLENS_REPORT_SOURCES ${CMAKE_CURRENT_BINARY_DIR}/report_assets.c)
