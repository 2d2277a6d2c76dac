import java.lang.invoke.MethodHandle;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.MethodType;
import java.lang.reflect.Constructor;
import java.lang.reflect.Method;

// Scenarios for the revelation tests; `java Reveal NAME` runs one and exits, printing the
// number of h() calls.
public class Reveal {
    public static void main(String[] args) throws Throwable {
        switch (args[0]) {
            case "reflection":
                // Outside the root (`main` is in no root's extent): recorded nothing, before and
                // after the root revealed the targets.
                new Refl().run();
                Refl.root();
                for (int i = 0; i < 2; i++) {
                    new Refl().run();
                }
                break;
            case "native":
                System.load(System.getProperty("nat.lib"));
                Nat.callback(4);
                Nat.run();
                for (int i = 0; i < 2; i++) {
                    Nat.callback(4);
                }
                break;
            case "threads":
                Par.main();
                break;
            case "serve":
                // For attach: each line on stdin runs the root once and prints `done <n>`.
                java.io.BufferedReader in = new java.io.BufferedReader(
                        new java.io.InputStreamReader(System.in));
                System.out.println("ready");
                while (in.readLine() != null) {
                    Refl.root();
                    System.out.println("done " + Refl.n);
                }
                return;
            default:
                throw new IllegalArgumentException(args[0]);
        }
        System.out.println("ok " + args[0] + " " + Refl.n + " " + Nat.n + " " + Par.n.get());
    }
}

// Targets reached only through reflection and a method handle: no call site names them.
class Refl {
    static int n;

    Refl() { }

    // Called through Constructor.newInstance: calls h() `k` times.
    Refl(int k) {
        for (int i = 0; i < k; i++) {
            h();
        }
    }

    static void root() throws Throwable {
        new Refl().run();
    }

    void run() throws Throwable {
        Method m = Refl.class.getDeclaredMethod("viaMethod");
        m.invoke(null);
        Constructor<Refl> c = Refl.class.getDeclaredConstructor(int.class);
        c.newInstance(2);
        MethodHandle mh = MethodHandles.lookup()
                .findVirtual(Refl.class, "viaHandle", MethodType.methodType(void.class));
        mh.invokeExact(this);
        mh.invokeExact(this);
    }

    static void viaMethod() {
        for (int i = 0; i < 3; i++) {
            h();
        }
    }

    void viaHandle() {
        for (int i = 0; i < 5; i++) {
            h();
        }
    }

    static void h() { n++; }
}

// A native method that calls back into Java (csrc in tests/native/nat.c).
class Nat {
    static int n;

    static void run() {
        callback(4);
    }

    static native void callback(int k);

    // Called by the native code only.
    static void back(int k) {
        for (int i = 0; i < k; i++) {
            h();
        }
    }

    static void h() { n++; }
}

// Eight threads enter the root together and call the same target reflectively at once: each
// must wait until the target is instrumented, so every tree is exact.
class Par {
    static final java.util.concurrent.atomic.AtomicInteger n =
            new java.util.concurrent.atomic.AtomicInteger();
    static final java.util.concurrent.CyclicBarrier barrier =
            new java.util.concurrent.CyclicBarrier(8);

    static void main() throws Exception {
        Thread[] ts = new Thread[8];
        for (int i = 0; i < ts.length; i++) {
            ts[i] = new Thread(() -> {
                try {
                    barrier.await();
                    work();
                } catch (Throwable t) {
                    throw new RuntimeException(t);
                }
            }, "par-" + i);
            ts[i].start();
        }
        for (Thread t : ts) {
            t.join();
        }
    }

    static void work() throws Throwable {
        Par.class.getDeclaredMethod("target").invoke(null);
    }

    static void target() {
        for (int i = 0; i < 3; i++) {
            h();
        }
    }

    static void h() { n.incrementAndGet(); }
}
