package ferrofluid.bench;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.nio.file.Files;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.zip.ZipEntry;
import java.util.zip.ZipInputStream;
import org.objectweb.asm.ClassReader;
import org.objectweb.asm.ClassVisitor;
import org.objectweb.asm.ClassWriter;
import org.objectweb.asm.Label;
import org.objectweb.asm.MethodVisitor;
import org.objectweb.asm.Opcodes;
import org.objectweb.asm.commons.AdviceAdapter;

/**
 * ASM doing what {@code ferrofluid instrument --probe entry-exit} does, the way ASM users write
 * it: ClassReader, an {@link AdviceAdapter} calling {@code enter} at method entry (after
 * {@code super()} in constructors) and {@code exit} before each return, a handler covering the
 * whole body that calls {@code unwind} and rethrows, and a ClassWriter with COMPUTE_FRAMES.
 *
 * <p>COMPUTE_FRAMES needs {@code getCommonSuperClass}; the default loads classes, which a
 * ClassFileLoadHook must not do, so it is answered from a map of class headers built once before
 * timing (not counted; ferrofluid needs no hierarchy at all).
 *
 * <p>Usage: {@code AsmBench [--warmup N] [--passes N] JMOD...}; prints one line of results.
 */
public final class AsmBench {
    private static final String HOOKS = "ferrofluid/Hooks";

    private AsmBench() {}

    public static void main(String[] args) throws IOException {
        int warmup = 3;
        int passes = 5;
        String dump = null;
        List<String> paths = new ArrayList<>();
        for (int i = 0; i < args.length; i++) {
            if (args[i].equals("--warmup")) warmup = Integer.parseInt(args[++i]);
            else if (args[i].equals("--passes")) passes = Integer.parseInt(args[++i]);
            else if (args[i].equals("--dump")) dump = args[++i];
            else paths.add(args[i]);
        }
        List<byte[]> classes = new ArrayList<>();
        for (String p : paths) classes.addAll(load(p));
        long bytes = 0;
        for (byte[] c : classes) bytes += c.length;
        Map<String, Header> hierarchy = headers(classes);

        double best = Double.MAX_VALUE;
        long output = 0;
        for (int pass = 0; pass < warmup + passes; pass++) {
            long start = System.nanoTime();
            int[] nextId = {0};
            long out = 0;
            for (byte[] c : classes) out += transform(c, hierarchy, nextId).length;
            double secs = (System.nanoTime() - start) / 1e9;
            if (pass >= warmup) best = Math.min(best, secs);
            output = out;
        }
        System.out.printf("asm classes=%d bytes=%d passes=%d best_seconds=%.4f classes_per_second=%.0f"
                + " mb_per_second=%.1f output_bytes=%d constructors_without_handler=%d%n",
                classes.size(), bytes, passes, best, classes.size() / best, bytes / best / 1e6, output,
                notEntered / (warmup + passes));
        if (dump != null) dump(classes, hierarchy, dump);
    }

    /** Methods where AdviceAdapter never called onMethodEnter (constructors it could not follow). */
    static long notEntered;

    /** Writes the transformed classes to a jar, to check them with tools/verify. */
    static void dump(List<byte[]> classes, Map<String, Header> hierarchy, String jar) throws IOException {
        try (java.util.zip.ZipOutputStream out = new java.util.zip.ZipOutputStream(Files.newOutputStream(Paths.get(jar)))) {
            int[] nextId = {0};
            Set<String> seen = new HashSet<>();
            for (byte[] c : classes) {
                String name = new ClassReader(c).getClassName() + ".class";
                if (!seen.add(name)) continue;
                out.putNextEntry(new ZipEntry(name));
                out.write(transform(c, hierarchy, nextId));
                out.closeEntry();
            }
        }
    }

    static byte[] transform(byte[] in, Map<String, Header> hierarchy, int[] nextId) {
        ClassReader reader = new ClassReader(in);
        ClassWriter writer = new HeaderClassWriter(reader, hierarchy);
        // Frames are recomputed by COMPUTE_FRAMES, so reading the old ones would be wasted work.
        reader.accept(new EntryExitClass(writer, nextId), ClassReader.SKIP_FRAMES);
        return writer.toByteArray();
    }

    /** Adds the entry-exit probe to every method with code. */
    static final class EntryExitClass extends ClassVisitor {
        private final int[] nextId;

        EntryExitClass(ClassVisitor next, int[] nextId) {
            super(Opcodes.ASM9, next);
            this.nextId = nextId;
        }

        @Override
        public MethodVisitor visitMethod(int access, String name, String desc, String sig, String[] exceptions) {
            MethodVisitor mv = super.visitMethod(access, name, desc, sig, exceptions);
            if (mv == null || (access & (Opcodes.ACC_ABSTRACT | Opcodes.ACC_NATIVE)) != 0) return mv;
            return new EntryExitMethod(mv, access, name, desc, nextId[0]++);
        }
    }

    static final class EntryExitMethod extends AdviceAdapter {
        private final int id;
        private final Label start = new Label();
        private final Label handler = new Label();
        /** False if AdviceAdapter never found the super()/this() call of a constructor. */
        private boolean entered;

        EntryExitMethod(MethodVisitor mv, int access, String name, String desc, int id) {
            super(Opcodes.ASM9, mv, access, name, desc);
            this.id = id;
        }

        // Inserted code goes to the next visitor (mv), as GeneratorAdapter's helpers do, so
        // AdviceAdapter's constructor stack tracking does not see it.

        @Override
        protected void onMethodEnter() {
            push(id);
            mv.visitMethodInsn(INVOKESTATIC, HOOKS, "enter", "(I)V", false);
            // The handler starts here: after super()/this() in constructors.
            mv.visitLabel(start);
            entered = true;
        }

        @Override
        protected void onMethodExit(int opcode) {
            if (opcode != ATHROW) {
                push(id);
                mv.visitMethodInsn(INVOKESTATIC, HOOKS, "exit", "(I)V", false);
            }
        }

        @Override
        public void visitMaxs(int maxStack, int maxLocals) {
            if (!entered) {
                notEntered++;
                super.visitMaxs(maxStack, maxLocals);
                return;
            }
            // Added last so the method's own handlers keep precedence over the catch-all.
            mv.visitLabel(handler);
            mv.visitTryCatchBlock(start, handler, handler, null);
            push(id);
            mv.visitMethodInsn(INVOKESTATIC, HOOKS, "unwind", "(I)V", false);
            mv.visitInsn(ATHROW);
            super.visitMaxs(maxStack, maxLocals);
        }
    }

    /** Superclass and interface flag of one class. */
    static final class Header {
        final String superName;
        final boolean isInterface;

        Header(String superName, boolean isInterface) {
            this.superName = superName;
            this.isInterface = isInterface;
        }
    }

    static Map<String, Header> headers(List<byte[]> classes) {
        Map<String, Header> map = new HashMap<>();
        for (byte[] c : classes) {
            ClassReader r = new ClassReader(c);
            map.put(r.getClassName(), new Header(r.getSuperName(), (r.getAccess() & Opcodes.ACC_INTERFACE) != 0));
        }
        return map;
    }

    /** COMPUTE_FRAMES without class loading: common superclasses from the header map. */
    static final class HeaderClassWriter extends ClassWriter {
        private final Map<String, Header> hierarchy;

        HeaderClassWriter(ClassReader reader, Map<String, Header> hierarchy) {
            super(reader, ClassWriter.COMPUTE_FRAMES);
            this.hierarchy = hierarchy;
        }

        @Override
        protected String getCommonSuperClass(String a, String b) {
            Header ha = hierarchy.get(a);
            Header hb = hierarchy.get(b);
            if (ha == null || hb == null || ha.isInterface || hb.isInterface) return "java/lang/Object";
            Set<String> supers = new HashSet<>();
            for (String c = a; c != null; c = superOf(c)) supers.add(c);
            for (String c = b; c != null; c = superOf(c)) {
                if (supers.contains(c)) return c;
            }
            return "java/lang/Object";
        }

        private String superOf(String name) {
            Header h = hierarchy.get(name);
            return h == null ? null : h.superName;
        }
    }

    static List<byte[]> load(String jmod) throws IOException {
        List<byte[]> out = new ArrayList<>();
        try (InputStream raw = Files.newInputStream(Paths.get(jmod))) {
            if (raw.skip(4) != 4) throw new IOException(jmod + ": truncated");
            try (ZipInputStream zip = new ZipInputStream(raw)) {
                byte[] chunk = new byte[65536];
                for (ZipEntry e; (e = zip.getNextEntry()) != null; ) {
                    if (!e.getName().startsWith("classes/") || !e.getName().endsWith(".class")) continue;
                    ByteArrayOutputStream buf = new ByteArrayOutputStream();
                    for (int n; (n = zip.read(chunk)) > 0; ) buf.write(chunk, 0, n);
                    out.add(buf.toByteArray());
                }
            }
        }
        return out;
    }
}
