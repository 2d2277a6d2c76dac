// Would Java-side probes (timestamps by System.nanoTime(), no JNI call per event) be cheaper or
// steadier? ns per call of System.nanoTime() and of a no-op JNI native, in windows of 20,000
// calls, SECONDS/2 each: percentiles over the windows.
public class NanoLevels {
    static native void probe(int id);
    static { System.loadLibrary("nprobe"); }
    static long sink;
    static double nano(int n) {
        long t0 = System.nanoTime(), s = 0;
        for (int i = 0; i < n; i++) s += System.nanoTime();
        sink += s;
        return (System.nanoTime() - t0) / (double) n;
    }
    static double jni(int n) {
        long t0 = System.nanoTime();
        for (int i = 0; i < n; i++) probe(i);
        return (System.nanoTime() - t0) / (double) n;
    }
    public static void main(String[] a) {
        int seconds = Integer.parseInt(a[0]);
        for (int w = 0; w < 200; w++) { nano(20000); jni(20000); }
        for (String kind : new String[] {"nanoTime", "jni"}) {
            long end = System.nanoTime() + seconds * 500_000_000L;
            java.util.List<Double> xs = new java.util.ArrayList<>();
            while (System.nanoTime() < end) xs.add(kind.equals("nanoTime") ? nano(20000) : jni(20000));
            java.util.Collections.sort(xs);
            int n = xs.size();
            System.out.printf("%-8s windows %d: p5 %.2f p25 %.2f p50 %.2f p75 %.2f p95 %.2f ns per call%n",
                kind, n, xs.get(n / 20), xs.get(n / 4), xs.get(n / 2), xs.get(3 * n / 4), xs.get(19 * n / 20));
        }
    }
}
