#!/bin/sh
# Doxygen INPUT_FILTER: Bypass's headers document with plain // comments (the project's style), so
# for doxygen a comment block on its own lines becomes ///, and a comment after a declaration on
# the same line (after ; , or {) becomes ///<. Lines with string literals are left alone.
exec sed -E \
  -e 's|^([[:space:]]*)// |\1/// |' \
  -e 's|^([[:space:]]*)//$|\1///|' \
  -e '/"/!s|^([^/]*[;,{])([[:space:]]+)// |\1\2///< |' \
  "$1"
