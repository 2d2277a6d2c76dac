// Sampled timing's test program (tests/timing.rs). args[0] says what to run:
// - `counts`: f() (the JP paper's Fig. 4 shape: f calls h and g(i) ten times, g(i) calls h i
//   times) three times;
// - `joined`: as `counts`, on a thread the main thread joins (its `Thread`'s monitor inflated
//   while it runs);
// - `attach DIR/go`: prints `ready`, waits for the file, then as `counts`, and prints `done`;
// - `repeat DIR/go`: as `attach`, f() every millisecond for 2.5 s instead;
// - `shares`: mix() until the thread used 1.5 s of CPU: heavy() spins three times as long as
//   light() each round;
// - `deflate`: compress() until the thread used 1.5 s of CPU: squeeze() compresses 1 MiB with
//   `Deflater`, whose work is native code;
// - `socket`: after 20,000 bytes read outside it (the JIT compiles the read path), serve()
//   reads 40 bytes a peer thread writes every 60 ms, spinning between reads (most of its wall
//   time blocked in the read).
import java.io.InputStream;
import java.io.OutputStream;
import java.lang.management.ManagementFactory;
import java.net.ServerSocket;
import java.net.Socket;
import java.util.zip.Deflater;

public class Timed {
    static int sink;
    static long spun;
    static final int WARM_UP = 20_000;

    static void f() {
        for (int i = 0; i < 10; i++) {
            h();
            g(i);
        }
    }

    static void g(int i) {
        for (int j = 0; j < i; j++) {
            h();
        }
    }

    static void h() {
        sink++;
    }

    static long spin(int n) {
        long s = spun;
        for (int i = 0; i < n; i++) {
            s = s * 6364136223846793005L + 1442695040888963407L;
        }
        spun = s;
        return s;
    }

    static void heavy() {
        spin(300_000);
    }

    static void light() {
        spin(100_000);
    }

    static void mix() {
        var bean = ManagementFactory.getThreadMXBean();
        long start = bean.getCurrentThreadCpuTime();
        while (bean.getCurrentThreadCpuTime() - start < 1_500_000_000L) {
            heavy();
            light();
        }
    }

    static final byte[] DATA = new byte[1 << 20];

    static void squeeze(byte[] out) {
        Deflater d = new Deflater(Deflater.BEST_COMPRESSION);
        d.setInput(DATA);
        d.finish();
        while (!d.finished()) {
            d.deflate(out);
        }
        d.end();
    }

    static void compress() {
        var bean = ManagementFactory.getThreadMXBean();
        long start = bean.getCurrentThreadCpuTime();
        byte[] out = new byte[64 << 10];
        while (bean.getCurrentThreadCpuTime() - start < 1_500_000_000L) {
            squeeze(out);
        }
    }

    static int readOne(InputStream in) throws Exception {
        return in.read();
    }

    static void serve(InputStream in) throws Exception {
        for (int i = 0; i < 40; i++) {
            if (readOne(in) < 0) {
                throw new IllegalStateException("peer closed");
            }
            spin(20_000_000);
        }
    }

    /** Prints `ready` and waits for the file `go`. */
    static void ready(String go) throws InterruptedException {
        System.out.println("ready");
        System.out.flush();
        java.io.File f = new java.io.File(go);
        while (!f.exists()) {
            Thread.sleep(10);
        }
    }

    public static void main(String[] args) throws Exception {
        switch (args[0]) {
            case "counts":
                for (int r = 0; r < 3; r++) {
                    f();
                }
                break;
            case "joined":
                Thread worker = new Thread(() -> {
                    for (int r = 0; r < 3; r++) {
                        f();
                    }
                }, "worker");
                worker.start();
                worker.join();
                break;
            case "attach":
                ready(args[1]);
                for (int r = 0; r < 3; r++) {
                    f();
                }
                System.out.println("done");
                break;
            case "repeat":
                ready(args[1]);
                long end = System.nanoTime() + 2_500_000_000L;
                while (System.nanoTime() < end) {
                    f();
                    Thread.sleep(1);
                }
                System.out.println("done");
                break;
            case "shares":
                mix();
                break;
            case "deflate":
                long x = 1;
                for (int i = 0; i < DATA.length; i++) {
                    x = x * 6364136223846793005L + 1442695040888963407L;
                    DATA[i] = (byte) ('a' + (x >>> 59));
                }
                compress();
                break;
            case "socket":
                try (ServerSocket server = new ServerSocket(0)) {
                    Thread peer = new Thread(() -> {
                        try (Socket s = new Socket("127.0.0.1", server.getLocalPort())) {
                            OutputStream out = s.getOutputStream();
                            out.write(new byte[WARM_UP]);
                            out.flush();
                            for (int i = 0; i < 40; i++) {
                                Thread.sleep(60);
                                out.write(i);
                                out.flush();
                            }
                        } catch (Exception e) {
                            throw new RuntimeException(e);
                        }
                    }, "peer");
                    peer.start();
                    try (Socket s = server.accept()) {
                        // Reads outside the root load the socket classes and get the JIT to
                        // compile the read path, as a server's is.
                        InputStream in = s.getInputStream();
                        for (int i = 0; i < WARM_UP; i++) {
                            if (in.read() < 0) {
                                throw new IllegalStateException("peer closed");
                            }
                        }
                        serve(in);
                    }
                    peer.join();
                }
                break;
            default:
                throw new IllegalArgumentException(args[0]);
        }
    }
}
