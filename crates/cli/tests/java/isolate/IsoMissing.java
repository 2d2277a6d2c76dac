/**
 * On the class path when `Isolate.java` is compiled, absent when it runs: the classes whose
 * verification needs it cannot link, as Jetty's `Slf4jLog` cannot without slf4j.
 */
public interface IsoMissing {
    int value();
}
