# Sourced by the *_sweep.sh scripts of this folder: each variant of a sweep is
# a copy of the working tree (not git's file list: a GPU machine's copy may
# carry a stale .git) with a constant edited, built on its own.

# variant_tree DIR: DIR holds a fresh copy of the working tree, build folders left out.
variant_tree() {
  rm -rf "$1" && mkdir -p "$1"
  tar --exclude='./build*' --exclude=./.git --exclude=./.carry -cf - . | tar -xf - -C "$1"
}

# build_variant DIR LABEL TARGET...: configures DIR/b for sm_90 and builds the
# targets in the background; prints "built LABEL" or "BUILD FAILED LABEL".
build_variant() {
  local dir=$1 label=$2
  shift 2
  (cd "$dir" && meson setup b -Dgpu_arch=sm_90 -Dmutants=disabled -Dslides=disabled >/dev/null 2>&1 &&
   ninja -C b "$@" >/dev/null 2>&1 && echo "built $label" || echo "BUILD FAILED $label") &
}
