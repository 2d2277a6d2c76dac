import java.io.File;
import java.io.RandomAccessFile;
import java.lang.reflect.Method;
import java.util.zip.CRC32;
import java.util.zip.Deflater;
import java.util.zip.Inflater;

/**
 * Uses natives of java.base the way programs do (zip, file I/O, sleeping, reflection, CRC32's
 * intrinsic natives, an exception's stack trace) and prints what they computed, which must not
 * change when every native
 * of java.base is wrapped. Sleeps exactly SLEEPS times on the main thread.
 */
public class JdkNatives {
    static final int SLEEPS = 20;

    public static int hidden(int x) {
        return x + 1;
    }

    public static void main(String[] args) throws Exception {
        byte[] data = new byte[4096];
        for (int i = 0; i < data.length; i++) {
            data[i] = (byte) (i * 7 ^ i >> 4);
        }
        long sum = 0;
        Deflater d = new Deflater();
        Inflater f = new Inflater();
        byte[] packed = new byte[8192];
        byte[] out = new byte[8192];
        for (int i = 0; i < 200; i++) {
            d.reset();
            d.setInput(data);
            d.finish();
            int n = d.deflate(packed);
            f.reset();
            f.setInput(packed, 0, n);
            sum += n + f.inflate(out);
        }
        d.end();
        f.end();
        CRC32 crc = new CRC32();
        crc.update(out, 0, 4096);
        File tmp = File.createTempFile("jdknatives", ".bin");
        try (RandomAccessFile file = new RandomAccessFile(tmp, "rw")) {
            file.write(data);
            file.seek(100);
            sum += file.read() + file.length();
        }
        tmp.delete();
        Method m = JdkNatives.class.getMethod("hidden", int.class);
        for (int i = 0; i < 50; i++) {
            sum += (Integer) m.invoke(null, i);
        }
        for (int i = 0; i < SLEEPS; i++) {
            Thread.sleep(1);
        }
        sum += "intern".concat("ed").intern().length();
        // An exception's stack trace starts at the method that made it.
        StackTraceElement top = new Exception().getStackTrace()[0];
        System.out.println(sum + " " + Long.toHexString(crc.getValue()) + " "
            + System.getProperty("java.version").isEmpty() + " " + top.getMethodName());
    }
}
