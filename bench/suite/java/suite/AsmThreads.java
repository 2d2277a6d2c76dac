package suite;

import java.net.URI;
import java.nio.file.FileSystem;
import java.nio.file.FileSystems;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.stream.Collectors;
import java.util.stream.Stream;
import org.objectweb.asm.ClassReader;
import org.objectweb.asm.ClassWriter;
import org.objectweb.asm.tree.ClassNode;
import org.objectweb.asm.tree.MethodNode;
import org.objectweb.asm.tree.analysis.Analyzer;
import org.objectweb.asm.tree.analysis.BasicValue;
import org.objectweb.asm.tree.analysis.BasicVerifier;
import org.objectweb.asm.tree.analysis.Frame;

/**
 * The multi-threaded workload: 8 threads take classes of the JDK's java.base (read from jrt:/) off a
 * shared counter and run ASM on each (parse to a tree, data-flow analysis of every method, write back).
 * SCALE rounds over the first 3000 classes. Each class's result lands in its own slot, so the checksum
 * does not depend on which thread did the work.
 */
public final class AsmThreads {
    static final int THREADS = 8;

    public static void main(String[] args) throws Exception {
        int scale = Sum.scale(args, 2);
        FileSystem jrt = FileSystems.getFileSystem(URI.create("jrt:/"));
        List<Path> paths;
        try (Stream<Path> walk = Files.walk(jrt.getPath("/modules/java.base"))) {
            paths = walk.filter(p -> p.toString().endsWith(".class")).sorted().limit(3000).collect(Collectors.toList());
        }
        byte[][] classes = new byte[paths.size()][];
        for (int i = 0; i < classes.length; i++) {
            classes[i] = Files.readAllBytes(paths.get(i));
        }
        long[] results = new long[classes.length];
        for (int round = 0; round < scale; round++) {
            AtomicInteger next = new AtomicInteger();
            Thread[] threads = new Thread[THREADS];
            for (int t = 0; t < THREADS; t++) {
                threads[t] = new Thread(() -> {
                    for (int i; (i = next.getAndIncrement()) < classes.length; ) {
                        results[i] += analyze(classes[i]);
                    }
                }, "asm-worker-" + t);
                threads[t].start();
            }
            for (Thread t : threads) {
                t.join();
            }
        }
        Sum sum = new Sum();
        for (long r : results) {
            sum.add(r);
        }
        sum.print("asm-threads");
    }

    static long analyze(byte[] bytes) {
        ClassNode node = new ClassNode();
        new ClassReader(bytes).accept(node, ClassReader.SKIP_DEBUG);
        long h = node.name.hashCode();
        for (MethodNode m : node.methods) {
            if (m.instructions.size() == 0) {
                continue;
            }
            try {
                Frame<BasicValue>[] frames = new Analyzer<>(new BasicVerifier()).analyze(node.name, m);
                for (Frame<BasicValue> f : frames) {
                    h = h * 31 + (f == null ? -1 : f.getStackSize() * 7 + f.getLocals());
                }
            } catch (Exception e) {
                h = h * 31 + e.getMessage().hashCode();
            }
        }
        ClassWriter w = new ClassWriter(ClassWriter.COMPUTE_MAXS);
        node.accept(w);
        return h * 31 + w.toByteArray().length;
    }
}
