#!/usr/bin/env bash
# Runs the table (after prepare.sh): every workload under every mode, N times, and writes it into
# docs/PERFORMANCE.md between <!-- suite:begin --> and <!-- suite:end -->. Exit status 1 when a
# checksum differs from its baseline's (the workload and mode are named), 2 on a setup error.
# Arguments go to `ferrofluid-suite run`: --n N, --cap-ratio R, --cap-secs S, --workloads a,b,
# --modes m1,m2, --no-doc, --keep, --smoke (see --help). A full run took 56 minutes on 2 cores with --cap-ratio 6 (more at the default 10).
set -euo pipefail
cd "$(dirname "$0")/../.."
export JAVA_HOME=${JAVA_HOME:-/usr/lib/jvm/java-17-openjdk-amd64}
cargo build --release -p ferrofluid -p ferrofluid-agent -p ferrofluid-suite
exec "${CARGO_TARGET_DIR:-target}/release/ferrofluid-suite" run "$@"
