#!/bin/sh
# Every allocation of the collector and its heap model goes through the counted allocator
# (collector/mem.h; the model through its hm_allocator): a bare malloc, calloc, realloc, free or
# strdup would be missing from the count, and a pointer of one kind given to the other's free
# corrupts the heap. Lists any, and fails.
# Usage: check_allocations.sh SOURCE_DIR
src=$1
found=$(grep -nE '(^|[^_a-zA-Z0-9>.])(malloc|calloc|realloc|free|strdup|strndup)\(' \
          "$src"/collector/*.c "$src"/heapmodel/*.c |
        grep -v -e '/collector/mem\.c:' -e "the C library's allocator" -e '^[^:]*:[0-9]*: *\*')
if [ -n "$found" ]; then
    echo "allocations that bypass collector/mem.h (use hl_mem_*, or hm_free/hm_calloc in heapmodel):"
    echo "$found"
    exit 1
fi
echo "every allocation of the collector and the heap model is counted"
