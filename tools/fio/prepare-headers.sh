#!/usr/bin/env bash
# Prepares the fio headers libfio_bypass.so is compiled against (tools/setup.sh runs it; idempotent,
# quiet: one line).
#
# Debian ships fio without headers, and an external engine shares fio's own structs (thread_data,
# thread_options, io_u, fio_file): their layout depends on the CONFIG_* macros fio's ./configure
# writes to config-host.h, so the headers must be those of the installed fio, configured as Debian
# configured it. This script therefore
#   1. adds a deb-src entry derived from the machine's own Debian sources (same URIs, suites,
#      components and keyring; no other host) when none is configured,
#   2. fetches the source package of exactly the installed fio version (apt-get source fio=VERSION),
#   3. runs fio's ./configure with debian/rules' flags (minus --enable-gfio and --enable-libnbd,
#      which only add the GUI and the nbd engine and need their libraries' headers; no header an
#      engine includes reads their macros: checked below),
#   4. checks the layout-relevant macros against the libraries Debian's binary links (libaio ->
#      CONFIG_LIBAIO, libibverbs -> CONFIG_RDMA, libnuma -> CONFIG_LIBNUMA, libz -> CONFIG_ZLIB),
#   5. keeps the headers and config-host.h under DEST/fio-<debian version>/ with bypass-fio.env
#      (FIO_DEBIAN_VERSION, FIO_VERSION, FIO_IOOPS_VERSION) for meson (tools/fio/meson.build).
#
#   tools/fio/prepare-headers.sh [DEST]      DEST defaults to /var/cache/bypass/fio
set -euo pipefail

dest=${1:-/var/cache/bypass/fio}
say() { echo "setup: fio headers: $*"; }
fail() { echo "setup: fio headers: $*" >&2; exit 1; }

version=$(dpkg-query -W -f='${Version}' fio 2>/dev/null) || fail "Debian's fio is not installed (apt-get install fio)"
[ -n "$version" ] || fail "Debian's fio is not installed (apt-get install fio)"
dir=$dest/fio-$version
if [ -f "$dir/bypass-fio.env" ]; then
  say "ready for fio $version in $dir"
  exit 0
fi

# 1. A deb-src entry for each Debian source entry that has none: the stanza (deb822 .sources) or
# the line (.list) apt reports for each Debian index, with its type changed to deb-src.
debsrc_sources=/etc/apt/sources.list.d/bypass-debian-src.sources
debsrc_list=/etc/apt/sources.list.d/bypass-debian-src.list
targets=$(apt-get indextargets --format '$(TARGET_OF) $(ORIGIN) $(SITE) $(RELEASE) $(SOURCESENTRY)' | sort -u)
have_src=$(awk '$1 == "deb-src" {print $3, $4}' <<<"$targets" | sort -u)
entries=$(awk '$1 == "deb" && $2 == "Debian" {print $3, $4, $5}' <<<"$targets" | sort -u |
          while read -r site release entry; do
            grep -qxF "$site $release" <<<"$have_src" || echo "$entry"
          done | sort -u)
if [ -n "$entries" ]; then
  stanzas= lines=
  for entry in $entries; do
    file=${entry%:*} index=${entry##*:}
    case "$file" in
      *.sources)  # deb822: the index-th paragraph, comments dropped, Types replaced
        stanzas+=$(awk -v n="$index" 'BEGIN { RS = "" } NR == n' "$file" |
                   awk '/^#/ { next } /^Types:/ { print "Types: deb-src"; next } { print }')$'\n\n' ;;
      *)          # one-line format: that line, "deb" replaced by "deb-src"
        lines+=$(sed -n "${index}p" "$file" | sed -E 's/^[[:space:]]*deb([[:space:]])/deb-src\1/')$'\n' ;;
    esac
  done
  header="# Written by Bypass's tools/fio/prepare-headers.sh: source packages from the Debian entries above"
  [ -z "$stanzas" ] || printf '%s\n%s' "$header" "$stanzas" > "$debsrc_sources"
  [ -z "$lines" ] || printf '%s\n%s' "$header" "$lines" > "$debsrc_list"
  log=$(mktemp)
  apt-get update -qq >"$log" 2>&1 || { tail -20 "$log" >&2; rm -f "$log"; fail "apt-get update with the deb-src entries failed"; }
  rm -f "$log"
elif ! apt-cache showsrc fio 2>/dev/null | grep -q "^Version: $version\$"; then
  apt-get update -qq >/dev/null 2>&1 || fail "apt-get update failed"
fi

# 2. The source of exactly the installed version.
mkdir -p "$dest"
work=$(mktemp -d "$dest/.prepare-XXXXXX")
trap 'rm -rf "$work"' EXIT
if ! (cd "$work" && apt-get source -qq -o APT::Sandbox::User=root "fio=$version") >"$work/source.log" 2>&1; then
  tail -20 "$work/source.log" >&2
  fail "apt-get source fio=$version failed (is dpkg-dev installed, and a deb-src entry for Debian there?)"
fi
src=$(find "$work" -mindepth 1 -maxdepth 1 -type d -name 'fio-*' | head -1)
[ -n "$src" ] && [ -f "$src/debian/rules" ] || fail "apt-get source fio=$version left no source tree"

# 3. Configure as debian/rules does.
grep -q -- '--disable-native --prefix=/usr --enable-gfio --enable-libnbd' "$src/debian/rules" ||
  fail "fio $version's debian/rules configures fio differently than this script knows: review its flags"
(cd "$src" && ./configure --disable-native --prefix=/usr --disable-tcmalloc) >"$work/configure.log" 2>&1 ||
  { tail -20 "$work/configure.log" >&2; fail "fio's ./configure failed"; }

# 4. The macros that change the layout of what an engine touches must match the Debian binary.
needed=$(objdump -p "$(command -v fio)" | awk '$1 == "NEEDED" {print $2}')
for pair in LIBAIO:libaio.so RDMA:libibverbs.so LIBNUMA:libnuma.so ZLIB:libz.so; do
  macro=CONFIG_${pair%%:*} lib=${pair#*:}
  in_binary=no in_headers=no
  grep -q "^$lib" <<<"$needed" && in_binary=yes
  grep -qx "#define $macro" "$src/config-host.h" && in_headers=yes
  [ "$in_binary" = "$in_headers" ] ||
    fail "$macro set by ./configure here: $in_headers; Debian's fio links $lib: $in_binary (install the -dev package of $lib: tools/setup.sh)"
done
! grep -qx '#define CONFIG_CUDA' "$src/config-host.h" || fail "CONFIG_CUDA is set, Debian's fio has no CUDA"
# Macros of the features left out above (or of libraries not installed here) must not reach a header.
if leaked=$(cd "$src" && grep -rlE --include='*.h' --exclude-dir=engines \
              'CONFIG_(GFIO|LIBNBD|RBD|RADOS|GFAPI|LIBPMEM|PMEMBLK|TCMALLOC)' .); then
  fail "headers read macros of features configured differently from Debian's build: $leaked"
fi

# 5. Keep the headers and the facts meson checks.
ioops=$(awk '$1 == "#define" && $2 == "FIO_IOOPS_VERSION" {print $3}' "$src/ioengines.h")
fio_version=$(sed -n 's/^DEF_VER=//p' "$src/FIO-VERSION-GEN")
[ -n "$ioops" ] && [ -n "$fio_version" ] || fail "cannot read FIO_IOOPS_VERSION or the version from the source"
[ "$(fio --version)" = "$fio_version" ] || fail "the source says $fio_version, the installed fio says $(fio --version)"
staged=$work/staged
mkdir -p "$staged"
(cd "$src" && find . -name '*.h' -not -path './debian/*' -exec cp --parents {} "$staged/" \;)
cat > "$staged/bypass-fio.env" <<EOF
FIO_DEBIAN_VERSION=$version
FIO_VERSION=$fio_version
FIO_IOOPS_VERSION=$ioops
EOF
rm -rf "$dir"
mv "$staged" "$dir"
say "prepared for fio $version ($fio_version, ioengine ABI $ioops) in $dir"
