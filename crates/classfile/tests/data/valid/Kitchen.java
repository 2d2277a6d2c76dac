// Exercises the attributes javac writes that the JDK's own classes do not:
// type annotations, parameter annotations, every element_value kind, records.
import java.lang.annotation.*;
import java.util.*;

@Retention(RetentionPolicy.RUNTIME) @Target({ElementType.TYPE_USE, ElementType.TYPE_PARAMETER})
@interface Visible { int value() default 7; }

@Retention(RetentionPolicy.CLASS) @Target({ElementType.TYPE_USE, ElementType.TYPE_PARAMETER})
@interface Hidden {}

@Retention(RetentionPolicy.RUNTIME)
@interface Info {
    String name();
    Class<?> type() default void.class;
    ElementType kind() default ElementType.FIELD;
    int[] numbers() default {1, 2};
    Deprecated nested() default @Deprecated;
    double ratio() default 0.5;
    long big() default 1L << 40;
    float f() default 1.5f;
    char c() default 'c';
    byte b() default 1;
    short s() default 2;
    boolean z() default true;
}

@Retention(RetentionPolicy.CLASS) @interface Note {}

public class Kitchen<@Visible T extends @Hidden Comparable<T>> implements @Visible Runnable {
    static final long BIG = 1L << 40;
    static final String NAME = "kitchen";
    @Info(name = "f", numbers = {3}) @Deprecated
    List<@Visible String> items = new ArrayList<>();

    record Point(@Visible int x, @Info(name = "y") int y) {}

    public void run() {}

    int sum(@Info(name = "a") final int a, @Note int b) throws java.io.IOException {
        @Visible Object o = (@Hidden Object) items;
        try {
            return a + b + o.hashCode();
        } catch (@Visible RuntimeException e) {
            return -1;
        }
    }

    Runnable lambda() {
        return () -> System.out.println(NAME);
    }

    class Inner {}
}
