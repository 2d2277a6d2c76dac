import java.lang.reflect.Method;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.locks.LockSupport;

/**
 * An idle virtual thread beside a busy platform thread: the virtual thread parks
 * (`LockSupport.park`, which unmounts it from its carrier) for the whole run, while `main` works
 * for a few hundred milliseconds. Virtual threads are daemons, so it is still parked when the
 * JVM ends. It prints `virtual` and its `Thread.getId()` before it parks; `main` prints `done`
 * at the end. Compiles with JDK 17's javac (the virtual thread is started by reflection) and runs
 * on JDK 21+.
 */
public class IdleVirtual {
    static final CountDownLatch READY = new CountDownLatch(1);
    static long sink;

    static void parkHere() {
        READY.countDown();
        while (true) {
            LockSupport.park();
        }
    }

    static void parker() {
        System.out.println("virtual " + Thread.currentThread().getId());
        System.out.flush();
        parkHere();
    }

    static long step(long i) {
        return (i * 31) ^ (i >>> 3);
    }

    static void work() {
        long end = System.nanoTime() + 300_000_000L;
        while (System.nanoTime() < end) {
            for (int i = 0; i < 1000; i++) {
                sink += step(i);
            }
        }
    }

    public static void main(String[] args) throws Exception {
        Method start = Thread.class.getMethod("startVirtualThread", Runnable.class);
        start.invoke(null, (Runnable) IdleVirtual::parker);
        READY.await();
        work();
        // Let the virtual thread unmount before the JVM ends.
        Thread.sleep(100);
        System.out.println("done");
        System.out.flush();
    }
}
