import java.util.ArrayList;
import java.util.List;
import java.util.function.Supplier;

/** Allocates known numbers of objects of known classes at known sites (the alloc tests). */
public class Allocs {
    static class Plain { int v; }
    static class Payload { long a, b; }
    static class Base { final Object o; Base(Object o) { this.o = o; } }
    /** Allocates a Payload in its constructor, before super() runs. */
    static class Child extends Base { Child(int i) { super(i >= 0 ? new Payload() : null); } }
    static class Lam { int v; }
    static class Shared { long v; }

    static long sink;

    static void use(Object o) { sink += System.identityHashCode(o) & 1; }

    public static void main(String[] args) throws Exception {
        int rounds = args.length > 0 ? Integer.parseInt(args[0]) : 1;
        for (int r = 0; r < rounds; r++) {
            round();
        }
        if (args.length > 1) {
            // Attach mode: wait until the tool is profiling (the file exists), then allocate.
            System.out.println("ready");
            System.out.flush();
            java.io.File go = new java.io.File(args[1]);
            while (!go.exists()) Thread.sleep(10);
            round();
        }
        System.out.println("done");
    }

    static void round() throws Exception {
        for (int i = 0; i < 1000; i++) use(new Plain());
        for (int i = 0; i < 10; i++) use(new boolean[i]);
        for (int i = 0; i < 11; i++) use(new byte[i]);
        for (int i = 0; i < 12; i++) use(new char[i]);
        for (int i = 0; i < 13; i++) use(new short[i]);
        for (int i = 0; i < 14; i++) use(new int[i]);
        for (int i = 0; i < 15; i++) use(new long[i]);
        for (int i = 0; i < 16; i++) use(new float[i]);
        for (int i = 0; i < 17; i++) use(new double[i]);
        for (int i = 0; i < 18; i++) use(new String[i]);
        for (int i = 0; i < 19; i++) use(new int[2][3]);
        for (int i = 0; i < 20; i++) use(new String[i][]);
        for (int i = 0; i < 21; i++) use(new Child(i));
        Supplier<Lam> s = () -> new Lam();
        for (int i = 0; i < 300; i++) use(s.get());
        List<Thread> threads = new ArrayList<>();
        for (int t = 0; t < 8; t++) {
            Thread th = new Thread(() -> {
                for (int i = 0; i < 20000; i++) use(new Shared());
            });
            threads.add(th);
            th.start();
        }
        for (Thread th : threads) th.join();
    }
}
