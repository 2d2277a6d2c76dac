package ferrofluid.tools;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.stream.Stream;
import java.util.zip.ZipEntry;
import java.util.zip.ZipInputStream;
import org.objectweb.asm.ClassReader;
import org.objectweb.asm.Opcodes;
import org.objectweb.asm.Type;
import org.objectweb.asm.tree.ClassNode;
import org.objectweb.asm.tree.MethodNode;
import org.objectweb.asm.tree.analysis.Analyzer;
import org.objectweb.asm.tree.analysis.AnalyzerException;
import org.objectweb.asm.tree.analysis.BasicValue;
import org.objectweb.asm.tree.analysis.SimpleVerifier;
import org.objectweb.asm.util.CheckClassAdapter;

/**
 * Runs ASM's checks on every class of directories, jars and jmods: the structural checks of
 * {@link CheckClassAdapter} and, per method, an {@link Analyzer} with a {@link SimpleVerifier}
 * (what {@code CheckClassAdapter.verify} does).
 *
 * <p>Unlike {@code CheckClassAdapter.verify}, type assignability is answered from class-file
 * headers (the targets, {@code --classpath} and the running JDK) instead of loading classes, so
 * the JDK's own classes and jars with missing optional dependencies can be checked.
 *
 * <p>With {@code TARGET=ORIGINAL}, a method that fails is checked again in the original class; if
 * the original fails in the same method (missing dependencies, code ASM cannot analyse), the
 * failure is not counted against the instrumentation but reported as a baseline failure.
 *
 * <pre>
 * java -cp asm.jar:asm-tree.jar:asm-analysis.jar:asm-util.jar:OUT ferrofluid.tools.Verify \
 *     [--classpath A.jar:B.jar] [--threads N] [--show N] [--link] TARGET[=ORIGINAL]...
 * java ... ferrofluid.tools.Verify --self-test
 * </pre>
 *
 * Prints one line per target, the first failures, then {@code verified N classes, M failed}, and
 * exits 1 if any class failed. {@code --self-test} checks that known-bad code is rejected.
 * {@code --link} also has the JVM load and link every class (see {@link Linker}); run it with
 * the hooks class on the boot class path.
 */
public final class Verify {
    private Verify() {}

    public static void main(String[] args) throws Exception {
        List<String> targets = new ArrayList<>();
        List<Path> classpath = new ArrayList<>();
        int threads = Runtime.getRuntime().availableProcessors();
        int show = 20;
        boolean link = false;
        for (int i = 0; i < args.length; i++) {
            switch (args[i]) {
                case "--classpath":
                    for (String p : args[++i].split(":")) {
                        if (!p.isEmpty()) classpath.add(Paths.get(p));
                    }
                    break;
                case "--threads":
                    threads = Integer.parseInt(args[++i]);
                    break;
                case "--show":
                    show = Integer.parseInt(args[++i]);
                    break;
                case "--self-test":
                    selfTest();
                    return;
                case "--link":
                    link = true;
                    break;
                default:
                    if (args[i].startsWith("--")) usage("unknown option " + args[i]);
                    targets.add(args[i]);
            }
        }
        if (targets.isEmpty()) usage("no target given");

        // Keys are "target-index/entry" so equal entry names of different targets
        // (module-info.class of every jmod) stay apart.
        Map<String, byte[]> classes = new LinkedHashMap<>();
        Map<Integer, Path> originalOf = new LinkedHashMap<>();
        List<Path> targetPaths = new ArrayList<>();
        for (String t : targets) {
            int eq = t.indexOf('=');
            Path target = Paths.get(eq < 0 ? t : t.substring(0, eq));
            int index = targetPaths.size();
            targetPaths.add(target);
            if (eq >= 0) originalOf.put(index, Paths.get(t.substring(eq + 1)));
            for (Map.Entry<String, byte[]> e : Archives.read(target).entrySet()) {
                classes.put(index + "/" + e.getKey(), e.getValue());
            }
        }
        Hierarchy hierarchy = new Hierarchy();
        hierarchy.addAll(classes.values());
        for (Path p : classpath) hierarchy.addAll(Archives.read(p).values());

        Map<Integer, Map<String, byte[]>> originals = new ConcurrentHashMap<>();
        // A class identical to its original is the original: checking it again proves nothing
        // about the instrumentation (and the original's own failures would be baseline anyway).
        java.util.Set<String> unchanged = new java.util.HashSet<>();
        for (Map.Entry<Integer, Path> o : originalOf.entrySet()) {
            Map<String, byte[]> before = Archives.read(o.getValue());
            originals.put(o.getKey(), before);
            String prefix = o.getKey() + "/";
            for (Map.Entry<String, byte[]> e : before.entrySet()) {
                byte[] after = classes.get(prefix + e.getKey());
                if (after != null && java.util.Arrays.equals(after, e.getValue())) unchanged.add(prefix + e.getKey());
            }
        }
        List<Failure> failures = Collections.synchronizedList(new ArrayList<>());
        List<Failure> baseline = Collections.synchronizedList(new ArrayList<>());
        long methods = 0;

        ExecutorService pool = Executors.newFixedThreadPool(Math.max(1, threads));
        List<Future<Integer>> jobs = new ArrayList<>();
        for (Map.Entry<String, byte[]> e : classes.entrySet()) {
            if (unchanged.contains(e.getKey())) continue;
            jobs.add(pool.submit(() -> {
                String key = e.getKey();
                Result r = check(key, e.getValue(), hierarchy);
                for (Failure f : r.failures) {
                    int index = Integer.parseInt(key.substring(0, key.indexOf('/')));
                    Path original = originalOf.get(index);
                    if (original != null && failsInOriginal(f, originals, index, original, hierarchy)) {
                        baseline.add(f);
                    } else {
                        failures.add(f);
                    }
                }
                return r.methods;
            }));
        }
        for (Future<Integer> j : jobs) methods += j.get();
        pool.shutdown();

        long linked = 0;
        if (link) {
            linked = Linker.check(targetPaths, originalOf, classpath, classes, unchanged, failures, baseline);
        }

        Collections.sort(failures);
        Collections.sort(baseline);
        for (int i = 0; i < targetPaths.size(); i++) {
            String prefix = i + "/";
            long n = classes.keySet().stream().filter(k -> k.startsWith(prefix)).count();
            long same = unchanged.stream().filter(k -> k.startsWith(prefix)).count();
            long failed = failures.stream().filter(f -> f.entry.startsWith(prefix)).map(f -> f.entry).distinct().count();
            System.out.println("target " + targetPaths.get(i) + ": " + n + " classes, " + failed + " failed, "
                    + same + " identical to the original (not checked again)");
        }
        for (Failure f : failures.subList(0, Math.min(show, failures.size()))) {
            System.out.println("FAIL " + f.describe(targetPaths));
        }
        for (Failure f : baseline.subList(0, Math.min(show, baseline.size()))) {
            System.out.println("BASELINE " + f.describe(targetPaths));
        }
        long failedClasses = failures.stream().map(f -> f.entry).distinct().count();
        System.out.println("verified " + classes.size() + " classes, " + failedClasses + " failed ("
                + unchanged.size() + " identical to the original, not checked again; "
                + methods + " methods analysed, " + failures.size() + " failures, "
                + baseline.size() + " failures also present in the original"
                + (link ? ", " + linked + " classes linked by the JVM" : "") + ")");
        System.exit(failedClasses == 0 ? 0 : 1);
    }

    /**
     * Checks that the checks can fail: a method whose max_stack is too small and one that
     * returns an int from a void method must both be rejected.
     */
    private static void selfTest() {
        org.objectweb.asm.ClassWriter cw = new org.objectweb.asm.ClassWriter(0);
        cw.visit(Opcodes.V1_8, Opcodes.ACC_PUBLIC, "Bad", null, "java/lang/Object", null);
        org.objectweb.asm.MethodVisitor mv = cw.visitMethod(Opcodes.ACC_STATIC, "stack", "()I", null, null);
        mv.visitCode();
        mv.visitInsn(Opcodes.ICONST_1);
        mv.visitInsn(Opcodes.IRETURN);
        mv.visitMaxs(0, 0);
        mv.visitEnd();
        mv = cw.visitMethod(Opcodes.ACC_STATIC, "type", "()V", null, null);
        mv.visitCode();
        mv.visitInsn(Opcodes.ICONST_1);
        mv.visitInsn(Opcodes.IRETURN);
        mv.visitMaxs(1, 0);
        mv.visitEnd();
        cw.visitEnd();
        byte[] bad = cw.toByteArray();
        Result r = check("Bad.class", bad, new Hierarchy());
        List<String> failed = new ArrayList<>();
        for (Failure f : r.failures) failed.add(f.method);
        // The JVM's verifier, as --link uses it, must reject the class too.
        ClassLoader loader = new ClassLoader(ClassLoader.getPlatformClassLoader()) {
            @Override
            protected Class<?> findClass(String name) throws ClassNotFoundException {
                if (!name.equals("Bad")) throw new ClassNotFoundException(name);
                return defineClass(name, bad, 0, bad.length);
            }
        };
        Throwable linkError = Linker.link("Bad", loader);
        boolean ok = failed.equals(List.of("stack()I", "type()V")) && linkError instanceof VerifyError;
        System.out.println("self-test: " + (ok ? "ok" : "FAILED") + ", ASM rejected " + failed
                + ", JVM linking: " + (linkError == null ? "accepted" : Linker.oneLine(linkError)));
        System.exit(ok ? 0 : 1);
    }

    private static void usage(String why) {
        System.err.println("Verify: " + why);
        System.err.println("usage: Verify [--classpath A.jar:B.jar] [--threads N] [--show N] [--link]"
                + " TARGET[=ORIGINAL]...   (directories, .jar or .jmod files)   |   Verify --self-test");
        System.exit(2);
    }

    private static boolean failsInOriginal(
            Failure f, Map<Integer, Map<String, byte[]>> originals, int index, Path original, Hierarchy h) {
        Map<String, byte[]> classes = originals.computeIfAbsent(index, i -> {
            try {
                return Archives.read(original);
            } catch (IOException e) {
                throw new java.io.UncheckedIOException(e);
            }
        });
        byte[] bytes = classes.get(f.entry.substring(f.entry.indexOf('/') + 1));
        if (bytes == null) return false;
        for (Failure o : check(f.entry, bytes, h).failures) {
            if (o.method.equals(f.method)) return true;
        }
        return false;
    }

    /** The failures of one class and how many methods were analysed. */
    private static final class Result {
        final List<Failure> failures = new ArrayList<>();
        int methods;
    }

    static Result check(String entry, byte[] bytes, Hierarchy hierarchy) {
        Result result = new Result();
        ClassNode node = new ClassNode();
        try {
            // Structural checks (opcodes, operands, labels, LocalVariableTable ranges, frames' shape).
            new ClassReader(bytes).accept(new CheckClassAdapter(Opcodes.ASM9, node, false) {}, 0);
        } catch (RuntimeException e) {
            result.failures.add(new Failure(entry, "-", String.valueOf(e)));
            // Still analyse the methods: a structural complaint (some compilers write empty
            // InnerClasses names) must not hide what the dataflow analysis would find.
            node = new ClassNode();
            try {
                new ClassReader(bytes).accept(node, 0);
            } catch (RuntimeException unreadable) {
                return result;
            }
        }
        Type self = Type.getObjectType(node.name);
        Type superType = node.superName == null ? null : Type.getObjectType(node.superName);
        List<Type> interfaces = new ArrayList<>();
        for (String i : node.interfaces) interfaces.add(Type.getObjectType(i));
        boolean isInterface = (node.access & Opcodes.ACC_INTERFACE) != 0;
        for (MethodNode m : node.methods) {
            result.methods++;
            HeaderVerifier v = new HeaderVerifier(hierarchy, self, superType, interfaces, isInterface);
            try {
                new Analyzer<BasicValue>(v).analyze(node.name, m);
            } catch (AnalyzerException | RuntimeException e) {
                result.failures.add(new Failure(entry, m.name + m.desc, String.valueOf(e.getMessage())));
            }
        }
        return result;
    }

    /** One failing method (or class, with method "-"). */
    static final class Failure implements Comparable<Failure> {
        final String entry;
        final String method;
        final String message;

        Failure(String entry, String method, String message) {
            this.entry = entry;
            this.method = method;
            this.message = message;
        }

        @Override
        public int compareTo(Failure o) {
            int c = entry.compareTo(o.entry);
            return c != 0 ? c : method.compareTo(o.method);
        }

        /** "target!entry method: message", naming the target instead of its index. */
        String describe(List<Path> targets) {
            int slash = entry.indexOf('/');
            String where = slash < 0 ? entry
                    : targets.get(Integer.parseInt(entry.substring(0, slash))) + "!" + entry.substring(slash + 1);
            return where + " " + method + ": " + message;
        }
    }

    /**
     * Loads every class of a target in a fresh class loader (over the target and the class path)
     * and links it, so the JVM's own verifier checks it, StackMapTable frames included (ASM's
     * analyzer ignores frames). {@code getDeclaredMethods()} links the class without initializing
     * it. A class that fails is loaded from the original too, in another loader; if that fails
     * with the same kind of error (a missing optional dependency, say), it is a baseline failure.
     */
    static final class Linker {
        /**
         * Links the classes of every target that did not come from a jmod (those belong to the
         * boot layer's modules and cannot be defined again); one loader over all these targets
         * and the class path, so targets may depend on each other, and one over their originals.
         */
        static long check(List<Path> targets, Map<Integer, Path> originalOf, List<Path> classpath,
                Map<String, byte[]> classes, java.util.Set<String> unchanged, List<Failure> failures,
                List<Failure> baseline) throws IOException {
            List<Integer> linkable = new ArrayList<>();
            List<Path> instrumentedPath = new ArrayList<>();
            List<Path> originalPath = new ArrayList<>();
            for (int i = 0; i < targets.size(); i++) {
                Path original = originalOf.get(i);
                if (original != null && original.toString().endsWith(".jmod")) continue;
                linkable.add(i);
                instrumentedPath.add(targets.get(i));
                if (original != null) originalPath.add(original);
            }
            long linked = 0;
            try (java.net.URLClassLoader instrumented = loader(instrumentedPath, classpath);
                    java.net.URLClassLoader originals = loader(originalPath, classpath)) {
                for (int index : linkable) {
                    String prefix = index + "/";
                    for (String key : classes.keySet()) {
                        if (!key.startsWith(prefix) || unchanged.contains(key)) continue;
                        String entry = key.substring(prefix.length());
                        // Versioned entries and module descriptors are not loadable by name.
                        if (entry.startsWith("META-INF/") || entry.endsWith("module-info.class")) continue;
                        String name = entry.substring(0, entry.length() - ".class".length()).replace('/', '.');
                        Throwable error = link(name, instrumented);
                        if (error == null) {
                            linked++;
                            continue;
                        }
                        Failure f = new Failure(key, "link", oneLine(error));
                        Throwable before = originalOf.containsKey(index) ? link(name, originals) : null;
                        if (before != null && before.getClass() == error.getClass()) baseline.add(f);
                        else failures.add(f);
                    }
                }
            }
            return linked;
        }

        static java.net.URLClassLoader loader(List<Path> jars, List<Path> classpath) throws IOException {
            List<java.net.URL> urls = new ArrayList<>();
            for (Path p : jars) urls.add(p.toUri().toURL());
            for (Path p : classpath) urls.add(p.toUri().toURL());
            return new java.net.URLClassLoader(urls.toArray(new java.net.URL[0]), ClassLoader.getPlatformClassLoader());
        }

        /** The error loading or linking {@code name} raised, or null. */
        static Throwable link(String name, ClassLoader loader) {
            try {
                Class.forName(name, false, loader).getDeclaredMethods();
                return null;
            } catch (Throwable t) {
                return t;
            }
        }

        static String oneLine(Throwable t) {
            String m = String.valueOf(t.getMessage());
            int nl = m.indexOf('\n');
            // HotSpot's VerifyError message has the reason on the lines after the first.
            if (t instanceof VerifyError && nl >= 0) {
                int reason = m.indexOf("Reason:");
                String detail = reason < 0 ? "" : m.substring(reason).split("\n", 3)[1].trim();
                return t.getClass().getSimpleName() + ": " + m.substring(0, nl) + " / " + detail;
            }
            return t.getClass().getSimpleName() + ": " + (nl < 0 ? m : m.substring(0, nl));
        }
    }

    /** Reads the classes of a directory, jar, jmod or single .class file, keyed by entry path. */
    static final class Archives {
        static Map<String, byte[]> read(Path path) throws IOException {
            Map<String, byte[]> out = new LinkedHashMap<>();
            if (Files.isDirectory(path)) {
                try (Stream<Path> files = Files.walk(path)) {
                    for (Path f : (Iterable<Path>) files.sorted()::iterator) {
                        if (Files.isRegularFile(f) && f.toString().endsWith(".class")) {
                            out.put(path.relativize(f).toString().replace('\\', '/'), Files.readAllBytes(f));
                        }
                    }
                }
                return out;
            }
            if (path.toString().endsWith(".class")) {
                out.put(path.getFileName().toString(), Files.readAllBytes(path));
                return out;
            }
            boolean jmod = path.toString().endsWith(".jmod");
            try (InputStream raw = Files.newInputStream(path)) {
                // A jmod is a 4-byte header ("JM", 1, 0) followed by a zip; classes live under classes/.
                if (jmod && raw.skip(4) != 4) throw new IOException(path + ": truncated jmod");
                try (ZipInputStream zip = new ZipInputStream(raw)) {
                    for (ZipEntry e; (e = zip.getNextEntry()) != null; ) {
                        String name = e.getName();
                        if (e.isDirectory() || !name.endsWith(".class")) continue;
                        if (jmod) {
                            if (!name.startsWith("classes/")) continue;
                            name = name.substring("classes/".length());
                        }
                        out.put(name, readAll(zip));
                    }
                }
            }
            return out;
        }

        private static byte[] readAll(InputStream in) throws IOException {
            ByteArrayOutputStream buf = new ByteArrayOutputStream();
            byte[] chunk = new byte[65536];
            for (int n; (n = in.read(chunk)) > 0; ) buf.write(chunk, 0, n);
            return buf.toByteArray();
        }
    }

    /** Superclass and interface flag of classes, read from class-file headers, never by loading. */
    static final class Hierarchy {
        /** Header of one class; superName is null for java/lang/Object. */
        static final class Info {
            final String superName;
            final boolean isInterface;

            Info(String superName, boolean isInterface) {
                this.superName = superName;
                this.isInterface = isInterface;
            }
        }

        private static final Info MISSING = new Info(null, false);
        private final Map<String, Info> known = new ConcurrentHashMap<>();

        void addAll(Iterable<byte[]> classes) {
            for (byte[] b : classes) {
                try {
                    ClassReader r = new ClassReader(b);
                    known.putIfAbsent(r.getClassName(),
                            new Info(r.getSuperName(), (r.getAccess() & Opcodes.ACC_INTERFACE) != 0));
                } catch (RuntimeException e) {
                    // Unreadable classes are reported by check(); they just add nothing here.
                }
            }
        }

        /** The class's header, from the targets, the class path, then the running JDK. */
        Info get(String name) {
            return known.computeIfAbsent(name, n -> {
                try (InputStream in = ClassLoader.getSystemResourceAsStream(n + ".class")) {
                    if (in == null) return MISSING;
                    ClassReader r = new ClassReader(in);
                    return new Info(r.getSuperName(), (r.getAccess() & Opcodes.ACC_INTERFACE) != 0);
                } catch (IOException e) {
                    return MISSING;
                }
            });
        }

        boolean isMissing(String name) {
            return !name.equals("java/lang/Object") && get(name) == MISSING;
        }
    }

    /** A SimpleVerifier whose type questions are answered by a {@link Hierarchy}. */
    static final class HeaderVerifier extends SimpleVerifier {
        private final Hierarchy hierarchy;

        HeaderVerifier(Hierarchy hierarchy, Type self, Type superType, List<Type> interfaces, boolean isInterface) {
            super(Opcodes.ASM9, self, superType, interfaces, isInterface);
            this.hierarchy = hierarchy;
        }

        @Override
        protected boolean isInterface(Type type) {
            return hierarchy.get(type.getInternalName()).isInterface;
        }

        @Override
        protected Type getSuperClass(Type type) {
            String name = type.getInternalName();
            if (name.equals("java/lang/Object")) return null;
            // An unknown class (dependency not on --classpath) is taken as a direct subclass of Object.
            String s = hierarchy.get(name).superName;
            return Type.getObjectType(s == null ? "java/lang/Object" : s);
        }

        @Override
        protected boolean isSubTypeOf(BasicValue value, BasicValue expected) {
            Type e = expected.getType();
            Type t = value.getType();
            if (e.getSort() != Type.OBJECT && e.getSort() != Type.ARRAY) return super.isSubTypeOf(value, expected);
            if ("null".equals(t.getInternalName())) return true;
            if (t.getSort() != Type.OBJECT && t.getSort() != Type.ARRAY) return false;
            // As SimpleVerifier: merges yield classes, never interfaces, so any reference may
            // stand where an interface is expected (the JVM's verifier does the same).
            return isAssignableFrom(e, t);
        }

        @Override
        protected boolean isAssignableFrom(Type type, Type other) {
            if (type.equals(other) || "null".equals(other.getInternalName())) return true;
            if (type.getSort() == Type.ARRAY) {
                if (other.getSort() != Type.ARRAY) return false;
                Type te = element(type);
                Type oe = element(other);
                boolean refs = isRef(te) && isRef(oe);
                return refs ? isAssignableFrom(te, oe) : te.equals(oe);
            }
            if (type.getSort() != Type.OBJECT) return false;
            String target = type.getInternalName();
            if (target.equals("java/lang/Object") || isInterface(type)) return true;
            if (other.getSort() != Type.OBJECT) return false;
            // Walk up other's superclasses. When a class on the way (or the target) is unknown,
            // the answer is unknowable here: accept, as the JVM would if the class turned out right.
            if (hierarchy.isMissing(target)) return true;
            for (String c = other.getInternalName(); c != null; c = hierarchy.get(c).superName) {
                if (c.equals(target)) return true;
                if (hierarchy.isMissing(c)) return true;
            }
            return false;
        }

        @Override
        protected Class<?> getClass(Type type) {
            throw new IllegalStateException("class loading disabled, asked for " + type);
        }

        private static boolean isRef(Type t) {
            return t.getSort() == Type.OBJECT || t.getSort() == Type.ARRAY;
        }

        /** The component type of an array type (one dimension less). */
        private static Type element(Type array) {
            return Type.getType(array.getDescriptor().substring(1));
        }
    }
}
