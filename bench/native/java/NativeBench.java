import java.io.File;
import java.io.RandomAccessFile;
import java.util.zip.Deflater;
import java.util.zip.Inflater;

/**
 * Native-heavy workloads for the cost of native-method wrappers: a trivial JNI native (the
 * worst case: the wrapper's cost against a call that does nothing), a JNI native calling back
 * into Java, zip (Deflater/Inflater natives) and small file reads (RandomAccessFile natives).
 * Prints one line per workload: ns per iteration, best of the timed rounds, and a checksum.
 *
 * <p>Usage: java NativeBench LIB WORKLOAD[,WORKLOAD...] [ROUNDS]
 */
public class NativeBench {
    static native int tiny(int x);

    /** Calls {@link #up} {@code n} times through JNI and returns the sum of its results. */
    static native int upcalls(int n);

    static int up(int x) {
        return x * 3 + 1;
    }

    static long sink;

    static long tinyLoop(int n) {
        int s = 0;
        for (int i = 0; i < n; i++) {
            s += tiny(i);
        }
        return s;
    }

    static long upcallLoop(int n) {
        long s = 0;
        for (int i = 0; i < n; i++) {
            s += upcalls(4);
        }
        return s;
    }

    static final byte[] DATA = new byte[1024];
    static {
        for (int i = 0; i < DATA.length; i++) {
            DATA[i] = (byte) ((i * 31) ^ (i >> 3));
        }
    }

    static long zipLoop(int n) throws Exception {
        Deflater d = new Deflater(1);
        Inflater f = new Inflater();
        byte[] packed = new byte[2048];
        byte[] out = new byte[2048];
        long s = 0;
        for (int i = 0; i < n; i++) {
            d.reset();
            d.setInput(DATA);
            d.finish();
            int len = d.deflate(packed);
            f.reset();
            f.setInput(packed, 0, len);
            s += f.inflate(out) + len;
        }
        d.end();
        f.end();
        return s;
    }

    static long fileLoop(int n, RandomAccessFile file) throws Exception {
        byte[] buf = new byte[256];
        long s = 0;
        for (int i = 0; i < n; i++) {
            file.seek((i * 256L) & 4095);
            s += file.read(buf) + buf[i & 255];
        }
        return s;
    }

    public static void main(String[] args) throws Exception {
        System.load(args[0]);
        int rounds = args.length > 2 ? Integer.parseInt(args[2]) : 10;
        File tmp = File.createTempFile("nativebench", ".bin");
        tmp.deleteOnExit();
        try (RandomAccessFile w = new RandomAccessFile(tmp, "rw")) {
            w.write(new byte[8192]);
        }
        try (RandomAccessFile file = new RandomAccessFile(tmp, "r")) {
            for (String w : args[1].split(",")) {
                int n;
                switch (w) {
                    case "tiny": n = 20_000_000; break;
                    case "upcall": n = 500_000; break;
                    case "zip": n = 20_000; break;
                    case "file": n = 300_000; break;
                    default: throw new IllegalArgumentException(w);
                }
                double best = Double.MAX_VALUE;
                long check = 0;
                for (int r = 0; r < rounds; r++) {
                    long t0 = System.nanoTime();
                    switch (w) {
                        case "tiny": check = tinyLoop(n); break;
                        case "upcall": check = upcallLoop(n); break;
                        case "zip": check = zipLoop(n); break;
                        default: check = fileLoop(n, file); break;
                    }
                    long t1 = System.nanoTime();
                    best = Math.min(best, (t1 - t0) / (double) n);
                }
                System.out.printf("%s %.2f ns/iter check %d%n", w, best, check);
            }
        }
    }
}
