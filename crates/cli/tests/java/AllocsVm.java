import java.lang.reflect.Array;
import java.lang.reflect.Constructor;
import java.util.ArrayList;
import java.util.List;

/**
 * Allocates known numbers of objects of known classes where no allocating instruction of the
 * program shows them (the alloc_vm tests): reflection, clone(), JNI, and the inner arrays of
 * multianewarray. Loops of 200 000 so that the JIT compiles them. Argument 0: the JNI library
 * (or "-" for none); argument 1, if any: attach mode's start file.
 */
public class AllocsVm {
    public static class Reflected { int v; }
    public static class ViaClass { int v; }
    public static class Element { }
    public static class Thrower { public Thrower() { throw new IllegalStateException(); } }
    /** Cloned by super.clone(), which reaches Object.clone. */
    public static class Copy implements Cloneable {
        long a;
        @Override public Copy clone() {
            try {
                return (Copy) super.clone();
            } catch (CloneNotSupportedException e) {
                throw new AssertionError(e);
            }
        }
    }
    /** Its clone() calls Copy's, whose super.clone() makes the object: counted once. */
    public static class SubCopy extends Copy {
        @Override public SubCopy clone() { return (SubCopy) super.clone(); }
    }
    public static class Shared implements Cloneable {
        long v;
        Shared copy() throws CloneNotSupportedException { return (Shared) clone(); }
    }
    public static class Native { int v; public Native() { } public Native(int v) { this.v = v; } }

    static final int N = 200_000;
    static final int JNI = 20_000;
    static long sink;

    static void use(Object o) { sink += System.identityHashCode(o) & 1; }

    static native Object allocObject(Class<?> c);
    static native Object newObject(Class<?> c);
    static native Object newObjectA(Class<?> c);
    static native Object newObjectArray(int n, Class<?> c);
    static native Object newIntArray(int n);
    static native Object newStringUtf();

    public static void main(String[] args) throws Exception {
        boolean jni = args.length > 0 && !args[0].equals("-");
        if (jni) {
            System.load(args[0]);
        }
        if (args.length > 1) {
            System.out.println("ready");
            System.out.flush();
            java.io.File go = new java.io.File(args[1]);
            while (!go.exists()) Thread.sleep(10);
        }
        round(jni);
        System.out.println("done");
    }

    static void round(boolean jni) throws Exception {
        Constructor<Reflected> ctor = Reflected.class.getDeclaredConstructor();
        for (int i = 0; i < N; i++) use(ctor.newInstance());
        for (int i = 0; i < 1000; i++) use(deprecatedNewInstance());
        for (int i = 0; i < N; i++) use(Array.newInstance(Element.class, i & 7));
        // 2 inner int[3] each.
        for (int i = 0; i < 1000; i++) use(Array.newInstance(int.class, 2, 3));
        short[] shorts = new short[5];
        for (int i = 0; i < N; i++) use(shorts.clone());
        Copy copy = new Copy();
        for (int i = 0; i < N; i++) use(copy.clone());
        SubCopy sub = new SubCopy();
        for (int i = 0; i < 1000; i++) use(sub.clone());
        // Counts nothing: the constructor throws.
        Constructor<Thrower> thrower = Thrower.class.getDeclaredConstructor();
        for (int i = 0; i < 100; i++) {
            try {
                use(thrower.newInstance());
            } catch (java.lang.reflect.InvocationTargetException expected) {
            }
        }
        // 1 long[][][], 2 long[][], 6 long[4] each; then 1 String[][][] and 2 String[3][] each.
        for (int i = 0; i < 1000; i++) use(new long[2][3][4]);
        for (int i = 0; i < 1000; i++) use(new String[2][3][]);
        // 8 threads × 20000 clones of one object.
        Shared shared = new Shared();
        List<Thread> threads = new ArrayList<>();
        for (int t = 0; t < 8; t++) {
            Thread th = new Thread(() -> {
                try {
                    for (int i = 0; i < 20000; i++) use(shared.copy());
                } catch (CloneNotSupportedException e) {
                    throw new AssertionError(e);
                }
            });
            threads.add(th);
            th.start();
        }
        for (Thread th : threads) th.join();
        if (jni) {
            for (int i = 0; i < JNI; i++) use(allocObject(Native.class));
            for (int i = 0; i < JNI; i++) use(newObject(Native.class));
            for (int i = 0; i < JNI; i++) use(newObjectA(Native.class));
            for (int i = 0; i < JNI; i++) use(newObjectArray(i & 3, Native.class));
            for (int i = 0; i < JNI; i++) use(newIntArray(i & 3));
            for (int i = 0; i < JNI; i++) use(newStringUtf());
        }
    }

    @SuppressWarnings("deprecation")
    static Object deprecatedNewInstance() throws Exception {
        return ViaClass.class.newInstance();
    }
}
