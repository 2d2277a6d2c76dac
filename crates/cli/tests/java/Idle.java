/**
 * Idle threads beside a busy one: `waiter` waits on a monitor (`Object.wait`) and `sleeper`
 * sleeps, each for the whole run, while `main` works for a few hundred milliseconds. Both are
 * daemons, so they are still blocked when the JVM ends. Each thread prints its name and
 * `Thread.getId()` before it blocks; `main` prints its own, then `done` once both others have.
 */
public class Idle {
    static final Object LOCK = new Object();
    static final java.util.concurrent.CountDownLatch READY = new java.util.concurrent.CountDownLatch(2);
    static long sink;

    static synchronized void say(String line) {
        System.out.println(line);
        System.out.flush();
    }

    static void introduce() {
        Thread me = Thread.currentThread();
        say(me.getName() + " " + me.getId());
    }

    static void waitHere() throws InterruptedException {
        synchronized (LOCK) {
            READY.countDown();
            while (true) {
                LOCK.wait();
            }
        }
    }

    static void sleepHere() throws InterruptedException {
        READY.countDown();
        while (true) {
            Thread.sleep(60_000);
        }
    }

    static void waiter() {
        introduce();
        try {
            waitHere();
        } catch (InterruptedException e) {
            throw new RuntimeException(e);
        }
    }

    static void sleeper() {
        introduce();
        try {
            sleepHere();
        } catch (InterruptedException e) {
            throw new RuntimeException(e);
        }
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
        introduce();
        for (String name : new String[] {"waiter", "sleeper"}) {
            Thread t = new Thread(name.equals("waiter") ? Idle::waiter : Idle::sleeper, name);
            t.setDaemon(true);
            t.start();
        }
        READY.await();
        work();
        // Let the other two block before the JVM ends.
        Thread.sleep(100);
        say("done");
    }
}
