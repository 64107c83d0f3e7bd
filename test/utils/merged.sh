#!/bin/sh
# "[VAR=X ...] PROGRAM [ARGS]" with stderr into stdout (lit: %cuda, %hsa).
exec env "$@" 2>&1
