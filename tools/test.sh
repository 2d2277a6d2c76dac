#!/usr/bin/env bash
# The whole test suite on a fresh machine (README's second command): installs what the tests
# need where it is missing (tools/setup.sh), then runs `cargo test --workspace --release
# --no-fail-fast` (every failing test binary reported, not only the first) with
# any arguments given (`tools/test.sh -p ferrofluid --test lifecycle`).
set -euo pipefail
cd "$(dirname "$0")/.."
source tools/setup.sh all
exec cargo test --workspace --release --no-fail-fast "$@" </dev/null
