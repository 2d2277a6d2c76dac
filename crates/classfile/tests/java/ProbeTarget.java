import java.util.function.Function;
import java.util.function.Supplier;

/** Exercises what the probes must survive; prints a checksum that must not change. */
public class ProbeTarget {
    int x;

    ProbeTarget(int a) { this(a > 3 ? a : -a, "s"); }
    ProbeTarget(int a, String s) { super(); x = a + s.length(); }
    ProbeTarget() { x = 7; }

    // JP paper, Fig. 4: f calls h() 10 times and g(i) 10 times; g(i) calls h() i times.
    static void f() { for (int i = 1; i <= 10; i++) { h(); g(i); } }
    static void g(int i) { for (int k = 0; k < i; k++) h(); }
    static void h() { }

    // 9n + 9 bytecodes per call (see the test).
    static int sum(int n) { int s = 0; for (int i = 0; i < n; i++) s += i; return s; }

    // Default BBA counts the whole block (7) when hashCode throws; Precise counts 4.
    static void npe(Object o) { int a = 1; o.hashCode(); a++; }

    static int loopAtZero(int n) { while (n > 3) n -= 2; return n; }
    static int sw(int k) { switch (k) { case 1: return 10; case 2: return 20; case 7: return 70; default: return -1; } }
    static int lsw(int k) { switch (k) { case 1: return 10; case 1000: return 20; case 70000: return 70; default: return -1; } }
    static int tc(int k) { try { if (k == 0) throw new IllegalStateException("x"); return 1; } catch (IllegalStateException e) { return 2; } finally { k++; } }
    synchronized int sync(int a) { return a * 2; }
    static void thrower(int d) { if (d == 0) throw new RuntimeException("deep"); thrower(d - 1); }
    static long longs(long a, double b, int[] arr) { long s = a; for (int i = 0; i < arr.length; i++) s += arr[i] * (long) b; return s; }
    static String tern(boolean b) { return new StringBuilder(b ? "a" : "b").append(new Object[] { b ? new ProbeTarget() : new ProbeTarget(1) }.length).toString(); }
    static int twr() throws Exception { try (java.io.StringReader r = new java.io.StringReader("abc")) { return r.read(); } }
    static int[][] multi() { return new int[3][4]; }
    static int lambdas() { Function<Integer, Integer> f = v -> v + 1; Supplier<ProbeTarget> s = ProbeTarget::new; return f.apply(2) + s.get().x; }
    static native int nat(int a);

    public static void main(String[] args) throws Exception {
        f();
        long sum = 0;
        for (int i = 0; i < 100; i++) {
            sum += loopAtZero(i) + sw(i % 9) + lsw(i % 3 == 0 ? 70000 : 1) + tc(i % 2) + new ProbeTarget(i).x + new ProbeTarget(i).sync(i);
            sum += longs(i, 1.5, new int[] { 1, 2, 3 }) + tern(i % 2 == 0).length() + twr() + multi()[2].length + lambdas();
            try { thrower(5); } catch (RuntimeException e) { sum++; }
        }
        sum += sum(10);
        try { npe(null); } catch (NullPointerException e) { sum++; }
        try { nat(1); } catch (UnsatisfiedLinkError e) { sum++; }
        System.out.println("checksum " + sum);
    }
}
