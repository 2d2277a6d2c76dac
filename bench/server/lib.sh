# Shared by run.sh and soak.sh: compiles the Java side and starts/stops the servers.
# Expects $JAVA_HOME, $java and $here.

H2_JAR=/usr/share/java/h2.jar
JETTY_CP=/usr/share/java/jetty9-server.jar:/usr/share/java/jetty9-util.jar:/usr/share/java/jetty9-http.jar:/usr/share/java/jetty9-io.jar:/usr/share/java/jetty9-servlet.jar:/usr/share/java/jetty9-security.jar:/usr/share/java/servlet-api.jar

build_classes() {
    local work=$1
    for f in "$H2_JAR" ${JETTY_CP//:/ }; do
        [ -f "$f" ] || { echo "missing $f: apt-get install -y libh2-java jetty9" >&2; exit 2; }
    done
    CLASSES=$work/classes
    mkdir -p "$CLASSES"
    "$JAVA_HOME/bin/javac" -nowarn -d "$CLASSES" -cp "$H2_JAR:$JETTY_CP" "$here"/java/*.java
    FILES=$work/files
    "$java" -cp "$CLASSES" Load --make-files "$FILES"
    LOAD_CP=$CLASSES:$H2_JAR
}

# server_kind SERVER [LOAD]: the load client's kind. Loads: `point` (H2: selects by key and
# merges; Jetty: static files) and `rows` (H2: aggregates and LIKE scans over 30,000 rows;
# Jetty: a servlet formatting 300 rows per request).
server_kind() {
    case $1-${2:-point} in
        h2-point) echo h2 ;;
        h2-rows) echo h2rows ;;
        jetty-point) echo http ;;
        jetty-rows) echo report ;;
        *) echo "unknown server/load $1 ${2:-}" >&2; exit 2 ;;
    esac
}

# The request path: what each request runs once.
server_root() {
    case $1 in
        h2) echo 'org.h2.server.TcpServerThread::process' ;;
        jetty) echo 'org.eclipse.jetty.server.HttpChannel::handle' ;;
    esac
}

free_port() {
    python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}

# start_server SERVER DIR: sets SERVER_PID and SERVER_PORT; the JVM gets no agent options
# ($SERVER_JAVA_OPTS: more JVM options, e.g. -XX:NativeMemoryTracking=summary).
start_server() {
    local server=$1 dir=$2
    SERVER_PORT=$(free_port)
    case $server in
        h2) "$java" -Xmx256m ${SERVER_JAVA_OPTS:-} -cp "$H2_JAR" org.h2.tools.Server -tcp -tcpPort "$SERVER_PORT" -ifNotExists \
                >"$dir/server.out" 2>&1 & ;;
        jetty) "$java" -Xmx256m ${SERVER_JAVA_OPTS:-} -cp "$CLASSES:$JETTY_CP" JettyMain "$SERVER_PORT" "$FILES" \
                >"$dir/server.out" 2>&1 & ;;
        *) echo "unknown server $server" >&2; exit 2 ;;
    esac
    SERVER_PID=$!
    for _ in $(seq 1 200); do
        if (exec 3<>"/dev/tcp/127.0.0.1/$SERVER_PORT") 2>/dev/null; then return 0; fi
        kill -0 "$SERVER_PID" 2>/dev/null || { echo "server $server died: $(cat "$dir/server.out")" >&2; exit 2; }
        sleep 0.1
    done
    echo "server $server did not listen on $SERVER_PORT" >&2
    kill "$SERVER_PID"
    exit 2
}

stop_server() {
    kill "$SERVER_PID" 2>/dev/null || true
    wait "$SERVER_PID" 2>/dev/null || true
    rm -rf "/tmp/.ferrofluid-$SERVER_PID"
}
