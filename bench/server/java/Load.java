import java.io.File;
import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicIntegerArray;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicLongArray;

/**
 * Load client of the live-server benchmark. N threads send requests to an H2 TCP server or to
 * an HTTP server, check every answer, and count completions in 100 ms buckets. Kinds:
 * {@code h2} (point queries: selects by key and per-thread merges), {@code h2rows} (aggregates
 * and LIKE scans over a table of {@link #ROWS} rows), {@code http} (GETs of static files),
 * {@code report} (GETs of a servlet that formats a few hundred rows per request).
 *
 * <pre>
 * Load --kind h2|h2rows|http|report --port P [--threads N] [--warmup S] [--before S] [--after S]
 *      [--out FILE] [--timeline FILE] [--label TEXT] [--cmd-log FILE] -- COMMAND...
 *     warm up, measure S s before, run COMMAND (an attach) and measure while it runs, then S s
 *     after it ended; append one result row to --out (tab-separated, header if new).
 * Load --kind h2|h2rows|http|report --port P [--threads N] --until FILE [--status FILE]
 *     run until FILE exists, writing "completions errors" to --status every 100 ms (soak).
 * Load --make-files DIR
 *     write the static files the http kind fetches and checks.
 * </pre>
 */
public final class Load {
    static final long BUCKET_NS = 100_000_000L;
    static final int BUCKETS = 4 * 3600 * 10;
    static final int FILES = 64;

    static final AtomicIntegerArray done = new AtomicIntegerArray(BUCKETS);
    /** Longest gap between two completions (any thread) ending in each bucket, ns. */
    static final AtomicLongArray gaps = new AtomicLongArray(BUCKETS);
    static final AtomicLong last = new AtomicLong();
    static final AtomicLong completions = new AtomicLong();
    static final AtomicLong errors = new AtomicLong();
    static final AtomicBoolean stop = new AtomicBoolean();
    static volatile String firstError;
    static long t0;
    /** Wall clock at t0, s since the epoch (the agent log's timestamps). */
    static double epoch0;

    public static void main(String[] args) throws Exception {
        String kind = "h2", label = "", out = null, timeline = null, cmdLog = null, until = null, status = null,
                agentLog = null, agentLogCopy = null;
        int port = 0, threads = 8;
        long pid = 0;
        double warmup = 10, before = 10, after = 10;
        List<String> command = new ArrayList<>();
        for (int i = 0; i < args.length; i++) {
            switch (args[i]) {
                case "--make-files": makeFiles(Path.of(args[++i])); return;
                case "--kind": kind = args[++i]; break;
                case "--port": port = Integer.parseInt(args[++i]); break;
                case "--threads": threads = Integer.parseInt(args[++i]); break;
                case "--warmup": warmup = Double.parseDouble(args[++i]); break;
                case "--before": before = Double.parseDouble(args[++i]); break;
                case "--after": after = Double.parseDouble(args[++i]); break;
                case "--out": out = args[++i]; break;
                case "--timeline": timeline = args[++i]; break;
                case "--label": label = args[++i]; break;
                case "--cmd-log": cmdLog = args[++i]; break;
                case "--until": until = args[++i]; break;
                case "--status": status = args[++i]; break;
                case "--agent-log": agentLog = args[++i]; break;
                case "--agent-log-copy": agentLogCopy = args[++i]; break;
                case "--pid": pid = Long.parseLong(args[++i]); break;
                case "--": command.addAll(Arrays.asList(args).subList(i + 1, args.length)); i = args.length; break;
                default: throw new IllegalArgumentException("unknown argument " + args[i]);
            }
        }
        if (kind.equals("h2")) setupH2(port);
        if (kind.equals("h2rows")) setupRows(port);
        if (kind.equals("report")) setupReports();
        t0 = System.nanoTime();
        epoch0 = System.currentTimeMillis() / 1000.0;
        last.set(t0);
        if (pid > 0) startCpuSampler(pid);
        List<Thread> workers = new ArrayList<>();
        for (int t = 0; t < threads; t++) {
            final int id = t;
            final String k = kind;
            final int p = port;
            Thread w = new Thread(() -> work(k, p, id), "load-" + t);
            w.setDaemon(true);
            w.start();
            workers.add(w);
        }
        if (until != null) {
            soak(Path.of(until), status);
        } else {
            measure(kind, label, command, warmup, before, after, out, timeline, cmdLog, agentLog, agentLogCopy);
        }
        stop.set(true);
        for (Thread w : workers) w.join(5000);
        System.exit(errors.get() == 0 ? 0 : 1);
    }

    static void soak(Path until, String status) throws Exception {
        while (!Files.exists(until)) {
            if (status != null) {
                Path tmp = Path.of(status + ".tmp");
                Files.writeString(tmp, completions.get() + " " + errors.get() + "\n");
                Files.move(tmp, Path.of(status), java.nio.file.StandardCopyOption.ATOMIC_MOVE);
            }
            Thread.sleep(100);
        }
        System.out.println("load: " + completions.get() + " requests, " + errors.get() + " wrong or failed"
                + (firstError == null ? "" : " (first: " + firstError + ")"));
    }

    static void measure(String kind, String label, List<String> command, double warmup, double before, double after,
            String out, String timeline, String cmdLog, String agentLog, String agentLogCopy) throws Exception {
        sleepUntil(warmup + before);
        double start = now();
        int exit = -1;
        // The agent removes its log when it detaches: read it while the tool runs.
        String[] agentText = {""};
        Thread tail = null;
        if (agentLog != null) {
            Path log = Path.of(agentLog);
            tail = new Thread(() -> {
                while (!Thread.currentThread().isInterrupted()) {
                    readInto(log, agentText);
                    try { Thread.sleep(100); } catch (InterruptedException e) { return; }
                }
            }, "agent-log");
            tail.setDaemon(true);
            tail.start();
        }
        if (!command.isEmpty()) {
            ProcessBuilder pb = new ProcessBuilder(command).redirectErrorStream(true);
            pb.redirectOutput(cmdLog == null ? ProcessBuilder.Redirect.DISCARD
                    : ProcessBuilder.Redirect.to(new File(cmdLog)));
            exit = pb.start().waitFor();
        }
        double end = now();
        if (tail != null) {
            tail.interrupt();
            tail.join();
            readInto(Path.of(agentLog), agentText);
            if (agentLogCopy != null) Files.writeString(Path.of(agentLogCopy), agentText[0]);
        }
        // Probes out: the agent's last "deinstrumented" line (the tool then still takes the
        // snapshot, which may take seconds for a large profile, with the program unprofiled),
        // unless a session started after it: the stack samples `attach` plans from are a
        // session of their own, and the log may be gone before the last one's line is read.
        double probesOut = end;
        if (!agentText[0].isEmpty()) {
            for (String line : agentText[0].split("\n")) {
                if (line.contains("[ferrofluid_agent::engine] engine ")) {
                    probesOut = end;
                } else if (line.contains("deinstrumented")) {
                    double t = Double.parseDouble(line.substring(0, line.indexOf(' '))) - epoch0;
                    if (t > start && t <= end) probesOut = t;
                }
            }
        }
        sleepUntil(end + after);
        double base = rate(warmup, warmup + before);
        double during = rate(start, probesOut);
        // The last 10 s with probes in: what the probes cost once instrumentation and
        // recompilation have settled (the whole window if it is shorter).
        double steadyFrom = Math.max(start, probesOut - 10);
        double steady = rate(steadyFrom, probesOut);
        double cpuBefore = cpuPerRequest(warmup, warmup + before);
        double cpuSteady = cpuPerRequest(steadyFrom, probesOut);
        double after05 = rate(end, end + Math.min(5, after));
        double after510 = after > 5 ? rate(end + 5, end + after) : Double.NaN;
        double stallBefore = stall(warmup, warmup + before);
        double stallDuring = stall(start, end + 1);
        double recovered = Double.NaN;
        for (double t = end; t + 1 <= end + after + 1e-9; t += 0.1) {
            if (rate(t, t + 1) >= 0.95 * base) { recovered = t - end; break; }
        }
        double worst = Double.MAX_VALUE;
        for (double t = start; t + 1 <= probesOut + 1e-9; t += 0.1) worst = Math.min(worst, rate(t, t + 1));
        if (worst == Double.MAX_VALUE) worst = during;
        String[] header = {"label", "kind", "before/s", "during/s", "during%", "steady/s", "steady%",
                "cpu_ms/req_before", "cpu_ms/req_steady", "cpu_ratio", "worst1s/s", "stall_before_ms",
                "stall_during_ms", "after0-5/s", "after0-5%", "after5-10/s", "after5-10%", "recovered_s", "probes_s", "session_s",
                "cmd_exit", "errors", "load1"};
        String[] row = {label, kind, f0(base), f0(during), pct(during, base), f0(steady), pct(steady, base),
                f3(cpuBefore), f3(cpuSteady), pct(cpuBefore, cpuSteady), f0(worst), f0(stallBefore * 1000),
                f0(stallDuring * 1000), f0(after05), pct(after05, base), f0(after510), pct(after510, base),
                Double.isNaN(recovered) ? "never" : String.format(Locale.ROOT, "%.1f", recovered),
                String.format(Locale.ROOT, "%.1f", probesOut - start), String.format(Locale.ROOT, "%.1f", end - start), Integer.toString(exit), Long.toString(errors.get()),
                loadavg()};
        System.out.println(String.join("\t", header));
        System.out.println(String.join("\t", row));
        if (firstError != null) System.out.println("first error: " + firstError);
        if (out != null) {
            Path p = Path.of(out);
            StringBuilder sb = new StringBuilder();
            if (!Files.exists(p)) sb.append(String.join("\t", header)).append('\n');
            sb.append(String.join("\t", row)).append('\n');
            Files.writeString(p, sb, java.nio.file.StandardOpenOption.CREATE, java.nio.file.StandardOpenOption.APPEND);
        }
        if (timeline != null) {
            StringBuilder sb = new StringBuilder("# attach " + start + " .. " + end + " s, probes out at " + probesOut
                    + " s\nt_s,completions\n");
            int n = (int) Math.ceil((end + after) * 10);
            for (int b = 0; b < n && b < BUCKETS; b++) sb.append(String.format(Locale.ROOT, "%.1f,%d\n", b / 10.0, done.get(b)));
            Files.writeString(Path.of(timeline), sb);
        }
    }

    static String loadavg() {
        try {
            return Files.readString(Path.of("/proc/loadavg")).split(" ")[0];
        } catch (IOException e) {
            return "?";
        }
    }

    static String f3(double v) { return Double.isNaN(v) ? "-" : String.format(Locale.ROOT, "%.3f", v); }

    static void readInto(Path log, String[] text) {
        try {
            if (Files.exists(log)) {
                String t = Files.readString(log);
                if (t.length() >= text[0].length()) text[0] = t;
            }
        } catch (IOException e) {
            // Gone between the check and the read: the text read last stays.
        }
    }

    /** The server's CPU time (user + system, clock ticks) at the start of each bucket; -1 unknown. */
    static final long[] cpuAt = new long[BUCKETS];

    static void startCpuSampler(long pid) {
        Arrays.fill(cpuAt, -1);
        Path stat = Path.of("/proc/" + pid + "/stat");
        Thread s = new Thread(() -> {
            while (!stop.get()) {
                int b = (int) ((System.nanoTime() - t0) / BUCKET_NS);
                try {
                    String line = Files.readString(stat);
                    String[] f = line.substring(line.lastIndexOf(')') + 2).split(" ");
                    // Fields 14 and 15 of stat (utime, stime), counted from the state (field 3).
                    long ticks = Long.parseLong(f[11]) + Long.parseLong(f[12]);
                    if (b >= 0 && b < BUCKETS && cpuAt[b] < 0) cpuAt[b] = ticks;
                } catch (IOException | RuntimeException e) {
                    return;
                }
                try { Thread.sleep(20); } catch (InterruptedException e) { return; }
            }
        }, "cpu-sampler");
        s.setDaemon(true);
        s.start();
    }

    /** The server's CPU milliseconds per completed request in [a, b) s; NaN if unknown. */
    static double cpuPerRequest(double a, double b) {
        int from = (int) Math.round(a * 10), to = (int) Math.round(b * 10);
        if (to <= from || from < 0 || to >= BUCKETS || cpuAt[from] < 0 || cpuAt[to] < 0) return Double.NaN;
        long n = 0;
        for (int i = from; i < to; i++) n += done.get(i);
        // Clock ticks are 10 ms (USER_HZ 100).
        return n == 0 ? Double.NaN : (cpuAt[to] - cpuAt[from]) * 10.0 / n;
    }

    static String f0(double v) { return Double.isNaN(v) ? "-" : String.format(Locale.ROOT, "%.0f", v); }
    static String pct(double v, double base) {
        return Double.isNaN(v) || base <= 0 ? "-" : String.format(Locale.ROOT, "%.0f%%", 100 * v / base);
    }

    static double now() { return (System.nanoTime() - t0) / 1e9; }

    static void sleepUntil(double t) throws InterruptedException {
        for (double d; (d = t - now()) > 0; ) Thread.sleep(Math.max(1, (long) (d * 1000)));
    }

    /** Completions per second in [a, b) s (whole buckets). */
    static double rate(double a, double b) {
        int from = (int) Math.round(a * 10), to = (int) Math.round(b * 10);
        if (to <= from) return Double.NaN;
        long n = 0;
        for (int i = from; i < to && i < BUCKETS; i++) n += done.get(i);
        return n / ((to - from) / 10.0);
    }

    /** The longest gap between completions ending in [a, b) s, in s. */
    static double stall(double a, double b) {
        int from = (int) Math.floor(a * 10), to = (int) Math.ceil(b * 10);
        long m = 0;
        for (int i = Math.max(0, from); i < to && i < BUCKETS; i++) m = Math.max(m, gaps.get(i));
        // A gap still open at the end counts up to now.
        long open = System.nanoTime() - last.get();
        if (last.get() - t0 < b * 1e9) m = Math.max(m, Math.min(open, (long) (b * 1e9) - (last.get() - t0)));
        return m / 1e9;
    }

    static void completed() {
        long t = System.nanoTime();
        int b = (int) ((t - t0) / BUCKET_NS);
        long prev = last.getAndAccumulate(t, Math::max);
        if (b >= 0 && b < BUCKETS) {
            done.incrementAndGet(b);
            if (t > prev) {
                long gap = t - prev;
                gaps.accumulateAndGet(b, gap, Math::max);
            }
        }
        completions.incrementAndGet();
    }

    static void failed(String what) {
        errors.incrementAndGet();
        if (firstError == null) firstError = what;
    }

    static void work(String kind, int port, int id) {
        while (!stop.get()) {
            try {
                switch (kind) {
                    case "h2": h2(port, id); break;
                    case "h2rows": h2rows(port, id); break;
                    case "report": report(port, id); break;
                    default: http(port, id); break;
                }
            } catch (Exception e) {
                if (stop.get()) return;
                failed(e.toString());
                try { Thread.sleep(100); } catch (InterruptedException ie) { return; }
            }
        }
    }

    static String url(int port) { return "jdbc:h2:tcp://127.0.0.1:" + port + "/mem:bench;DB_CLOSE_DELAY=-1"; }

    static void setupH2(int port) throws Exception {
        try (Connection c = DriverManager.getConnection(url(port), "sa", ""); Statement s = c.createStatement()) {
            s.execute("CREATE TABLE IF NOT EXISTS t(id INT PRIMARY KEY, v VARCHAR(40))");
            s.execute("CREATE TABLE IF NOT EXISTS w(th INT PRIMARY KEY, seq BIGINT)");
            try (PreparedStatement p = c.prepareStatement("MERGE INTO t KEY(id) VALUES(?, ?)")) {
                for (int i = 0; i < 1000; i++) {
                    p.setInt(1, i);
                    p.setString(2, "v" + i);
                    p.addBatch();
                }
                p.executeBatch();
            }
        }
    }

    /** One connection; in turn: two selects by key, a merge of this thread's row, a select of it. */
    static void h2(int port, int id) throws Exception {
        try (Connection c = DriverManager.getConnection(url(port), "sa", "");
                PreparedStatement sel = c.prepareStatement("SELECT v, id * 3 FROM t WHERE id = ?");
                PreparedStatement merge = c.prepareStatement("MERGE INTO w KEY(th) VALUES(?, ?)");
                PreparedStatement mine = c.prepareStatement("SELECT seq FROM w WHERE th = ?")) {
            long seq = 0;
            while (!stop.get()) {
                for (int k = 0; k < 2; k++) {
                    int key = (int) ((seq * 7919 + id * 31 + k) % 1000);
                    sel.setInt(1, key);
                    try (ResultSet r = sel.executeQuery()) {
                        if (!r.next() || !("v" + key).equals(r.getString(1)) || r.getInt(2) != key * 3 || r.next()) {
                            failed("select " + key + ": wrong answer");
                        } else completed();
                    }
                }
                seq++;
                merge.setInt(1, id);
                merge.setLong(2, seq);
                if (merge.executeUpdate() != 1) failed("merge: update count"); else completed();
                mine.setInt(1, id);
                try (ResultSet r = mine.executeQuery()) {
                    if (!r.next() || r.getLong(1) != seq) failed("select own row: wrong answer"); else completed();
                }
            }
        }
    }

    static byte[] content(int k) {
        StringBuilder sb = new StringBuilder();
        long x = k * 2654435761L + 1;
        for (int i = 0; i < 64; i++) {
            x = x * 6364136223846793005L + 1442695040888963407L;
            sb.append("line ").append(k).append(' ').append(Long.toHexString(x)).append('\n');
        }
        return sb.toString().getBytes(StandardCharsets.UTF_8);
    }

    static void makeFiles(Path dir) throws IOException {
        Files.createDirectories(dir);
        for (int k = 0; k < FILES; k++) Files.write(dir.resolve("f" + k + ".txt"), content(k));
    }

    static void http(int port, int id) throws Exception {
        HttpClient client = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1).build();
        byte[][] expected = new byte[FILES][];
        for (int k = 0; k < FILES; k++) expected[k] = content(k);
        long seq = id;
        while (!stop.get()) {
            int k = (int) (seq++ % FILES);
            HttpRequest req = HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port + "/f" + k + ".txt"))
                    .timeout(java.time.Duration.ofSeconds(60)).build();
            HttpResponse<byte[]> r = client.send(req, HttpResponse.BodyHandlers.ofByteArray());
            if (r.statusCode() != 200 || !Arrays.equals(r.body(), expected[k])) {
                failed("GET f" + k + ".txt: status " + r.statusCode() + ", " + r.body().length + " bytes");
            } else completed();
        }
    }

    /** Rows of the table the {@code h2rows} queries scan. */
    static final int ROWS = 30_000;
    static final int GROUPS = 40;
    /** Thresholds of the aggregate query ({@code qty >= t}) and LIKE patterns ({@code %dd%}). */
    static final int THRESHOLDS = 16;
    static final int PATTERNS = 100;
    /** Expected answers: per threshold and group, rows and sum of qty; per pattern, rows, sum, max id. */
    static final long[][] groupCount = new long[THRESHOLDS][GROUPS];
    static final long[][] groupSum = new long[THRESHOLDS][GROUPS];
    static final long[][] likeAnswer = new long[PATTERNS][3];

    static int rowQty(int id) { return (int) (mix(id) % 1000); }
    static int rowGroup(int id) { return (int) ((mix(id) >>> 10) % GROUPS); }
    static String rowName(int id) {
        long x = mix(id);
        return Report.WORDS[(int) ((x >>> 20) & 15)] + "-" + ((x >>> 24) % 100_000);
    }
    static long mix(int id) { return ((id + 1) * 2654435761L) & 0xFFFFFFFFL ^ (id * 40503L << 7); }

    /** Creates (once per server) and fills table r, and computes every answer the queries must give. */
    static void setupRows(int port) throws Exception {
        try (Connection c = DriverManager.getConnection(url(port), "sa", ""); Statement s = c.createStatement()) {
            s.execute("CREATE TABLE IF NOT EXISTS r(id INT PRIMARY KEY, grp INT, qty INT, name VARCHAR(40))");
            int have;
            try (ResultSet r = s.executeQuery("SELECT COUNT(*) FROM r")) {
                r.next();
                have = r.getInt(1);
            }
            if (have != ROWS) {
                s.execute("DELETE FROM r");
                try (PreparedStatement p = c.prepareStatement("INSERT INTO r VALUES(?, ?, ?, ?)")) {
                    for (int i = 0; i < ROWS; i++) {
                        p.setInt(1, i);
                        p.setInt(2, rowGroup(i));
                        p.setInt(3, rowQty(i));
                        p.setString(4, rowName(i));
                        p.addBatch();
                        if (i % 1000 == 999) p.executeBatch();
                    }
                    p.executeBatch();
                }
            }
        }
        for (int i = 0; i < ROWS; i++) {
            int q = rowQty(i), g = rowGroup(i);
            for (int t = 0; t < THRESHOLDS; t++) {
                if (q >= t * 60) {
                    groupCount[t][g]++;
                    groupSum[t][g] += q;
                }
            }
            String name = rowName(i);
            for (int d = 0; d < PATTERNS; d++) {
                if (name.contains(twoDigits(d))) {
                    likeAnswer[d][0]++;
                    likeAnswer[d][1] += q;
                    likeAnswer[d][2] = Math.max(likeAnswer[d][2], i);
                }
            }
        }
    }

    static String twoDigits(int d) { return d < 10 ? "0" + d : Integer.toString(d); }

    /**
     * One connection; in turn: a GROUP BY with COUNT, SUM and AVG over the rows above a threshold,
     * and a LIKE scan with COUNT, SUM and MAX. Both read every row of r.
     */
    static void h2rows(int port, int id) throws Exception {
        try (Connection c = DriverManager.getConnection(url(port), "sa", "");
                PreparedStatement agg = c.prepareStatement("SELECT grp, COUNT(*), SUM(qty), AVG(CAST(qty AS DOUBLE))"
                        + " FROM r WHERE qty >= ? GROUP BY grp ORDER BY grp");
                PreparedStatement like = c.prepareStatement("SELECT COUNT(*), SUM(qty), MAX(id) FROM r WHERE name LIKE ?")) {
            long seq = id;
            while (!stop.get()) {
                int t = (int) (seq % THRESHOLDS);
                agg.setInt(1, t * 60);
                boolean ok = true;
                try (ResultSet r = agg.executeQuery()) {
                    for (int g = 0; g < GROUPS && ok; g++) {
                        if (groupCount[t][g] == 0) continue;
                        ok = r.next() && r.getInt(1) == g && r.getLong(2) == groupCount[t][g]
                                && r.getLong(3) == groupSum[t][g]
                                && Math.abs(r.getDouble(4) - (double) groupSum[t][g] / groupCount[t][g]) < 1e-6;
                    }
                    ok = ok && !r.next();
                }
                if (ok) completed(); else failed("aggregate qty >= " + t * 60 + ": wrong answer");
                int d = (int) ((seq * 37) % PATTERNS);
                like.setString(1, "%" + twoDigits(d) + "%");
                try (ResultSet r = like.executeQuery()) {
                    long[] a = likeAnswer[d];
                    if (!r.next() || r.getLong(1) != a[0] || r.getLong(2) != a[1] || (a[0] > 0 && r.getLong(3) != a[2])) {
                        failed("like %" + twoDigits(d) + "%: wrong answer");
                    } else completed();
                }
                seq++;
            }
        }
    }

    /** Rows per report page, and the pages the load asks for (each checked against its own rendering). */
    static final int REPORT_ROWS = 300;
    static final int REPORTS = 64;
    static final byte[][] reports = new byte[REPORTS][];

    static void setupReports() {
        for (int k = 0; k < REPORTS; k++) reports[k] = Report.render(k, REPORT_ROWS).getBytes(StandardCharsets.UTF_8);
    }

    static void report(int port, int id) throws Exception {
        HttpClient client = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1).build();
        long seq = id;
        while (!stop.get()) {
            int k = (int) (seq++ % REPORTS);
            HttpRequest req = HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port + "/report/?seed=" + k
                    + "&rows=" + REPORT_ROWS)).timeout(java.time.Duration.ofSeconds(60)).build();
            HttpResponse<byte[]> r = client.send(req, HttpResponse.BodyHandlers.ofByteArray());
            if (r.statusCode() != 200 || !Arrays.equals(r.body(), reports[k])) {
                failed("GET report " + k + ": status " + r.statusCode() + ", " + r.body().length + " bytes");
            } else completed();
        }
    }
}
