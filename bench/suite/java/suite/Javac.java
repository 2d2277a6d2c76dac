package suite;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.List;
import java.util.stream.Collectors;
import java.util.stream.Stream;
import javax.tools.JavaCompiler;
import javax.tools.ToolProvider;

/**
 * javac compiling a real source tree: the first SCALE files (sorted) of the JDK 17 module java.xml
 * (from Debian's openjdk-17-source, unpacked by the prepare step), patched into java.xml.
 * Args: SCALE SRC_DIR OUT_DIR. The checksum covers every class file written, in name order.
 */
public final class Javac {
    public static void main(String[] args) throws Exception {
        int scale = Sum.scale(args, 200);
        Path src = Paths.get(args[1]);
        Path out = Paths.get(args[2]);
        List<String> files;
        try (Stream<Path> walk = Files.walk(src)) {
            files = walk.filter(p -> p.toString().endsWith(".java") && !p.endsWith("module-info.java"))
                    .map(Path::toString).sorted().limit(scale).collect(Collectors.toList());
        }
        deleteTree(out);
        Files.createDirectories(out);
        List<String> options = new ArrayList<>(List.of("-d", out.toString(), "--patch-module", "java.xml=" + src,
                "-proc:none", "-nowarn", "-Xlint:none", "-implicit:none", "-XDsuppressNotes", "-Xmaxerrs", "1"));
        options.addAll(files);
        JavaCompiler javac = ToolProvider.getSystemJavaCompiler();
        int status = javac.run(null, null, null, options.toArray(new String[0]));
        if (status != 0) {
            throw new IllegalStateException("javac failed: " + status);
        }
        Sum sum = new Sum();
        List<Path> classes;
        try (Stream<Path> walk = Files.walk(out)) {
            classes = walk.filter(Files::isRegularFile).sorted().collect(Collectors.toList());
        }
        for (Path p : classes) {
            sum.add(out.relativize(p).toString()).add(Files.readAllBytes(p));
        }
        sum.print("javac");
    }

    static void deleteTree(Path dir) throws IOException {
        if (!Files.exists(dir)) {
            return;
        }
        try (Stream<Path> walk = Files.walk(dir)) {
            for (Path p : walk.sorted((a, b) -> b.compareTo(a)).collect(Collectors.toList())) {
                Files.delete(p);
            }
        }
    }
}
