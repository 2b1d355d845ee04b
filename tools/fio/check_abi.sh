#!/usr/bin/env bash
# Build-time ABI check of libfio_bypass.so (tools/fio/meson.build): builds abi_probe.c against the
# prepared headers and has the installed fio load it. fio refuses an engine whose ioengine_ops
# version differs from its own FIO_IOOPS_VERSION, so this compares the headers' version with the
# installed fio's, whatever its version string says.
#   check_abi.sh FIO PROBE_SOURCE HEADERS_DIR IOOPS_VERSION STAMP CC...
set -euo pipefail
fio=$1 source=$2 headers=$3 ioops=$4 stamp=$5
shift 5
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
"$@" -shared -fPIC -D_GNU_SOURCE -D_LARGEFILE_SOURCE -D_FILE_OFFSET_BITS=64 -DBITS_PER_LONG=64 \
  -isystem "$headers" -include config-host.h -o "$work/probe.so" "$source"
out=$("$fio" --enghelp="$work/probe.so" 2>&1 || true)  # exit 1 for an engine without options
if ! grep -q 'bypass-abi-probe has no options' <<<"$out"; then
  echo "fio engine ABI check: $("$fio" --version) does not load an engine built from headers with FIO_IOOPS_VERSION $ioops ($headers):" >&2
  echo "$out" >&2
  echo "Prepare the headers of the installed fio again (tools/setup.sh) and reconfigure." >&2
  exit 1
fi
echo "fio $("$fio" --version) accepts ioengine ABI $ioops" > "$stamp"
