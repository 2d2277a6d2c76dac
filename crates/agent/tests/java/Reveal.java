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
            default:
                throw new IllegalArgumentException(args[0]);
        }
        System.out.println("ok " + args[0] + " " + Refl.n + " " + Nat.n);
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
