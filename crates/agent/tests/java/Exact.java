// Scenarios for the exactness tests; `java Exact NAME` runs one and exits.
public class Exact {
    public static void main(String[] args) throws Throwable {
        switch (args[0]) {
            case "fig4":
                for (int i = 0; i < 5; i++) {
                    Fig4.h(); // outside the root: records nothing
                }
                Fig4.f();
                break;
            case "exceptions":
                Exc.run();
                break;
            case "recursion":
                Rec.fact(6);
                break;
            case "threads":
                Thr.main();
                break;
            case "lambdas":
                Lam.run();
                break;
            case "outside-lambdas":
                LamOut.warm(); // creates and calls the lambdas outside the root
                LamOut.run();
                break;
            case "outside-handles":
                HndOut.twice(0); // initialises the class (and its handles) outside the root
                HndOut.run();
                break;
            case "receivers":
                Recv.main();
                break;
            case "starts":
                Starts.main();
                break;
            case "cold":
                Cold.run();
                break;
            case "branches":
                Branch.run();
                break;
            case "loading":
                Loading.run();
                break;
            case "marks":
                Marks.run();
                break;
            case "statics":
                Statics.main();
                break;
            case "upcalls":
                Upcalls.run();
                break;
            case "linkage":
                Linkage.run();
                break;
            case "reflectinit":
                ReflectInit.main();
                break;
            default:
                throw new IllegalArgumentException(args[0]);
        }
        System.out.println("ok " + args[0]);
    }
}

// An exception thrown in e() unwinds d, c, b and a (5 frames) to run(), three times.
class Exc {
    static int caught;

    static void run() {
        for (int i = 0; i < 3; i++) {
            try {
                a();
            } catch (IllegalStateException x) {
                caught++;
            }
            ok();
        }
    }

    static void a() { b(); }
    static void b() { c(); }
    static void c() { d(); }
    static void d() { e(); }
    static void e() { throw new IllegalStateException("deep"); }
    static void ok() { }
}

class Rec {
    static long fact(int n) {
        return n <= 1 ? 1 : n * fact(n - 1);
    }
}

// Eight threads started inside the root, each its own tree: work() calls h() 10 times.
class Thr {
    static void main() throws Exception {
        Thread[] ts = new Thread[8];
        for (int i = 0; i < ts.length; i++) {
            ts[i] = new Thread(Thr::work, "worker-" + i);
            ts[i].start();
        }
        for (Thread t : ts) {
            t.join();
        }
        work(); // and once on main
    }

    static void work() {
        for (int i = 0; i < 10; i++) {
            h();
        }
    }

    static void h() { }
}

class Lam {
    static int n;

    static void run() {
        Runnable r = () -> h();
        for (int i = 0; i < 3; i++) {
            r.run();
        }
        java.util.function.IntUnaryOperator sq = x -> x * x;
        n += sq.applyAsInt(4);
    }

    static void h() { n++; }
}

// Lambdas created outside the root (in the static initialiser) and called inside it: the calls
// reach hidden classes, whose methods call the lambda body and the method reference's target.
class LamOut {
    static int n;
    static final Runnable R = () -> h();
    static final java.util.function.IntUnaryOperator TWICE = LamOut::twice;

    static void warm() {
        R.run();
        n += TWICE.applyAsInt(1);
    }

    static void run() {
        for (int i = 0; i < 3; i++) {
            R.run();
            n += TWICE.applyAsInt(i);
        }
    }

    static int twice(int x) { return 2 * x; }

    static void h() { n++; }
}

// Method handles made outside the root (in the static initialiser) and invoked inside it: a
// direct one twice, then bound and adapted ones (the agent walks them down to the methods
// they run: the target, and a filter): insertArguments, filterReturnValue, asType,
// asVarargsCollector.
class HndOut {
    static int n;
    static final java.lang.invoke.MethodHandle TWICE;
    static final java.lang.invoke.MethodHandle ADD_TO;
    static final java.lang.invoke.MethodHandle NEG_INC;
    static final java.lang.invoke.MethodHandle THRICE_BOXED;
    static final java.lang.invoke.MethodHandle SUM;

    static {
        try {
            var lookup = java.lang.invoke.MethodHandles.lookup();
            var intToInt = java.lang.invoke.MethodType.methodType(int.class, int.class);
            TWICE = lookup.findStatic(HndOut.class, "twice", intToInt);
            var add = lookup.findStatic(HndOut.class, "add",
                java.lang.invoke.MethodType.methodType(int.class, int.class, int.class));
            ADD_TO = java.lang.invoke.MethodHandles.insertArguments(add, 0, 5);
            NEG_INC = java.lang.invoke.MethodHandles.filterReturnValue(
                lookup.findStatic(HndOut.class, "inc", intToInt),
                lookup.findStatic(HndOut.class, "neg", intToInt));
            THRICE_BOXED = lookup.findStatic(HndOut.class, "thrice", intToInt)
                .asType(java.lang.invoke.MethodType.methodType(Integer.class, Integer.class));
            SUM = lookup.findStatic(HndOut.class, "sum",
                    java.lang.invoke.MethodType.methodType(int.class, int[].class))
                .asVarargsCollector(int[].class);
        } catch (ReflectiveOperationException e) {
            throw new ExceptionInInitializerError(e);
        }
    }

    static void run() throws Throwable {
        for (int i = 0; i < 3; i++) {
            n += (int) TWICE.invokeExact(i);
            n += (int) TWICE.invokeExact(i + 1);
            n += (int) ADD_TO.invokeExact(i);
            n += (int) NEG_INC.invokeExact(i);
            n += (Integer) THRICE_BOXED.invokeExact((Integer) i);
            n += (int) SUM.invoke(i, 1);
        }
    }

    static int twice(int x) { return 2 * x; }

    static int add(int a, int b) { return a + b; }

    static int inc(int x) { return x + 1; }

    static int neg(int x) { return -x; }

    static int thrice(int x) { return 3 * x; }

    static int sum(int... xs) {
        int s = 0;
        for (int x : xs) {
            s += x;
        }
        return s;
    }
}

// A virtual call with five loaded targets (a receiver site): only the two classes whose
// instances reach it get their area() instrumented. Shapes are made outside the root; area()
// is also called outside it, where it records nothing.
class Recv {
    abstract static class Shape { abstract int area(); }
    static class Sq extends Shape { int area() { return 4; } }
    static class Ci extends Shape { int area() { return h() + 3; } }
    static class Tri extends Shape { int area() { return 3; } }
    static class Hex extends Shape { int area() { return 6; } }
    static class Pent extends Shape { int area() { return 5; } }

    static int h() { return 1; }

    static int sum;

    static void main() {
        Class<?>[] loaded = { Tri.class, Hex.class, Pent.class };
        Shape[] xs = { new Sq(), new Ci(), new Tri() };
        sum += xs[2].area() + loaded.length;
        run(xs);
    }

    static void run(Shape[] xs) {
        for (int i = 0; i < 10; i++) {
            sum += xs[i % 2].area();
        }
    }
}

// Threads started inside the root are their own trees; a failed second start() inside the root
// must not make a thread started later outside the root count as started inside it.
class Starts {
    static void main() throws Exception {
        root();
        Thread outside = new Thread(Thr::work, "outside");
        outside.start();
        outside.join();
    }

    static void root() throws Exception {
        Thread inside = new Thread(Thr::work, "inside");
        inside.start();
        try {
            inside.start();
        } catch (IllegalThreadStateException e) {
            // expected: a thread starts once
        }
        inside.join();
    }
}

// Calls on the way to a throw and at a handler's head (cold calls): revealed when they first
// run, exactly counted from that first call on; never() is on a throw path never taken.
class Cold {
    static class Oops extends RuntimeException { Oops(String m) { super(m); } }
    static int sink;

    static String why(int i) { return "i=" + i; }
    static void log(String m) { sink += m.length(); }
    static String never() { return "never"; }

    static int step(int i) {
        if (i < 0) throw new IllegalStateException(never());
        if (i % 4 == 3) throw new Oops(why(i));
        return i;
    }

    static int run() {
        int s = 0;
        for (int i = 0; i < 8; i++) {
            try {
                s += step(i);
            } catch (Oops e) {
                log(e.getMessage());
            }
        }
        return s;
    }
}

// Calls after a branch (deferred sites): never() is on a branch never taken, loop() in a loop
// entered from the second call on, later() on a branch taken on the last call only; first() is
// on step's entry line. Each is revealed before its first call and counted exactly.
class Branch {
    static int sink;

    static void first() { sink += 3; }
    static void never() { sink += 100; }
    static void loop() { sink++; }
    static void later() { sink += 2; }

    static void step(int round) {
        first();
        if (round < 0) never();
        for (int i = 0; i < round; i++) loop();
        if (round == 4) later();
    }

    static void run() {
        for (int r = 0; r < 5; r++) step(r);
    }
}

// Classes loaded or initialised in the middle of the root. Verifying Loading (when main first
// calls run, outside the root) loads Sub and Base, since make() returns a Sub as a Base, but does
// not prepare them: make()'s first invocation chooses Sub.<init> while the agent cannot
// retransform Sub yet, and Base's static initialiser, which the first `new Sub()` runs. Table is
// loaded and initialised inside the root: its static initialiser, which no call site names,
// calls fill(), which calls sq() 3 times.
class Loading {
    static int sink;

    static class Base {
        static final int SEED = seed();

        static int seed() { return 7; }

        Base() { sink += SEED; }
    }

    static class Sub extends Base { Sub() { sink += 2; } }

    static class Table {
        static final int[] T = fill(3);

        static int[] fill(int n) {
            int[] t = new int[n];
            for (int i = 0; i < n; i++) t[i] = sq(i);
            return t;
        }

        static int sq(int i) { return i * i; }
    }

    static Base make() { return new Sub(); }

    static void run() {
        for (int i = 0; i < 3; i++) make();
        sink += Table.T[2];
    }
}

// A method far cheaper than its probes and one far dearer: the report marks the first's time
// as mostly probe cost and not the second's.
class Marks {
    static long sink;

    static void run() {
        for (int i = 0; i < 200_000; i++) {
            tiny(i);
        }
        for (int i = 0; i < 4; i++) {
            spin();
        }
    }

    static void tiny(int i) { sink += i; }

    // About 5 ms of arithmetic (a dependent chain the JIT cannot fold).
    static void spin() {
        long x = sink;
        for (int i = 0; i < 5_000_000; i++) {
            x = x * 6364136223846793005L + 1442695040888963407L;
        }
        sink = x;
    }
}

// Classes loaded before the root and initialised inside it by a static field access, which no
// call site names. main() loads Holder, Store and Sub (and Base, its superclass) without
// initialising them (a class literal is not an active use, JVMS 5.5), then calls run(): reading
// Holder.VALUE runs Holder's initialiser, which calls compute(); writing Store.count runs Store's,
// which calls start(); reading Sub.LIMIT runs Base's initialiser, then Sub's.
class Statics {
    static int sink;

    static class Holder {
        static final int VALUE = compute();

        static int compute() { return 6 * 7; }
    }

    static class Store {
        static int count = start();

        static int start() { return 1; }
    }

    static class Base {
        static final int[] B = base();

        static int[] base() { return new int[] {1, 2}; }
    }

    static class Sub extends Base {
        static final int LIMIT = limit();

        static int limit() { return B.length; }
    }

    static void main() {
        Class<?>[] early = {Holder.class, Store.class, Sub.class};
        sink += early.length;
        run();
    }

    static void run() {
        sink += Holder.VALUE;
        Store.count = 5;
        sink += Sub.LIMIT;
    }
}

// Classes a root loads through the application class loader: to resolve each, the JVM calls
// ClassLoader.loadClass(String) itself, with no call site naming it.
class Upcalls {
    static int sink;

    static class First { int v = 1; }

    static class Second { int v = 2; }

    static void run() {
        sink += new First().v;
        sink += new Second().v;
    }
}

// invokedynamic and ldc linkage a root runs for the first time: the JVM calls
// MethodHandleNatives itself (linkCallSite, linkMethodHandleConstant, findMethodHandleType) to
// link the lambda's call site, with no call site naming them. The lambda body and h() are
// application code, counted exactly.
class Linkage {
    static int sink;

    static void h() { sink++; }

    static void run() {
        Runnable r = () -> h();
        for (int i = 0; i < 3; i++) {
            r.run();
        }
    }
}

// Classes whose static initialiser reflection runs from native code inside the root, no call
// site naming it. main() loads Early, Stat, Made, Fld, Ens and Hnd without initialising them (a
// class literal is not an active use); run() initialises Early with Class.forName, Late (not
// loaded before) too, Stat by invoking its static method reflectively, Made by constructing it
// reflectively, Fld by reading its static field reflectively, Ens with
// Lookup.ensureInitialized and Hnd by calling its static method through a method handle (the
// last three through Unsafe.ensureClassInitialized).
class ReflectInit {
    static int sink;

    static class Early {
        static { sink += 1; }
    }

    static class Late {
        static { sink += 2; }
    }

    static class Stat {
        static { sink += 3; }

        static int get() { return 4; }
    }

    static class Made {
        static { sink += 5; }

        public Made() { sink += 6; }
    }

    static class Fld {
        static int f = 7;

        static { sink += 8; }
    }

    static class Ens {
        static { sink += 9; }
    }

    static class Hnd {
        static { sink += 10; }

        static int get() { return 11; }
    }

    static void main() throws Throwable {
        Class<?>[] early = {Early.class, Stat.class, Made.class, Fld.class, Ens.class, Hnd.class};
        sink += early.length;
        run();
    }

    static void run() throws Throwable {
        ClassLoader l = ReflectInit.class.getClassLoader();
        Class.forName("ReflectInit$Early", true, l);
        Class.forName("ReflectInit$Late", true, l);
        sink += (Integer) Stat.class.getDeclaredMethod("get").invoke(null);
        Made.class.getConstructor().newInstance();
        sink += Fld.class.getDeclaredField("f").getInt(null);
        java.lang.invoke.MethodHandles.Lookup lookup = java.lang.invoke.MethodHandles.lookup();
        lookup.ensureInitialized(Ens.class);
        java.lang.invoke.MethodHandle get =
                lookup.findStatic(Hnd.class, "get", java.lang.invoke.MethodType.methodType(int.class));
        sink += (int) get.invokeExact();
    }
}
