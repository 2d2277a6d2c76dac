#!/usr/bin/env bash
# Prepares the overhead and correctness suite; idempotent (run it again any time):
# installs the Debian packages of the workloads, builds ferrofluid, its agent and the runner
# (release), compiles the workload drivers and the JVMTI event agent, and unpacks the javac
# workload's sources. Arguments go to `ferrofluid-suite prepare` (e.g. --work DIR).
set -euo pipefail
cd "$(dirname "$0")/../.."
export DEBIAN_FRONTEND=noninteractive

packages=(openjdk-17-jdk-headless gcc libxalan2-java libbatik-java fop libh2-java jython groovy
    libasm-java libxerces2-java liblucene8-java)
sudo=()
if [ "$(id -u)" -ne 0 ]; then sudo=(sudo -n); fi
missing=()
for p in "${packages[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
    echo "prepare.sh: installing ${missing[*]}"
    "${sudo[@]}" apt-get update </dev/null
    "${sudo[@]}" apt-get install -y --no-install-recommends "${missing[@]}" </dev/null
fi

export JAVA_HOME=${JAVA_HOME:-/usr/lib/jvm/java-17-openjdk-amd64}
cargo build --release -p ferrofluid -p ferrofluid-agent -p ferrofluid-suite
"${CARGO_TARGET_DIR:-target}/release/ferrofluid-suite" prepare "$@"
