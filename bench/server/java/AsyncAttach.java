import com.sun.tools.attach.VirtualMachine;

/**
 * The benchmark's anchor: async-profiler attached to a running JVM through the JDK's attach API.
 * {@code AsyncAttach PID LIB SECONDS FILE [EVENT]} loads LIB (libasyncProfiler.so, built from its
 * own sources) with {@code start,event=EVENT,interval=10ms} (EVENT: cpu unless given), waits
 * SECONDS, and loads it again with {@code stop} writing collapsed stacks to FILE.
 */
public final class AsyncAttach {
    public static void main(String[] args) throws Exception {
        String pid = args[0];
        String lib = args[1];
        double seconds = Double.parseDouble(args[2]);
        String file = args[3];
        String event = args.length > 4 ? args[4] : "cpu";
        VirtualMachine vm = VirtualMachine.attach(pid);
        try {
            vm.loadAgentPath(lib, "start,event=" + event + ",interval=10ms");
            Thread.sleep((long) (seconds * 1000));
            vm.loadAgentPath(lib, "stop,file=" + file + ",collapsed");
        } finally {
            vm.detach();
        }
    }
}
