package demo;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.function.IntUnaryOperator;

/**
 * The bundled demo program: a little of everything the probes must handle (loops at the
 * start of a method, constructors calling this()/super(), synchronized methods, exceptions
 * thrown and caught across frames, switches, lambdas, arrays of all kinds). Its output is
 * deterministic, so an instrumented copy must print exactly the same.
 */
public final class Main {
    private final String name;
    private int counter;

    private Main(String name) {
        this.name = name;
    }

    private Main() {
        this(pick(3) > 1 ? "default" : "none");
    }

    private static int pick(int n) {
        return n * 2;
    }

    /** Starts with a loop, so the method's first instruction is a branch target. */
    static long collatzSteps(long n) {
        long steps = 0;
        while (n != 1) {
            n = (n % 2 == 0) ? n / 2 : 3 * n + 1;
            steps++;
        }
        return steps;
    }

    synchronized void bump(int by) {
        counter += by;
    }

    static int fib(int n) {
        return n < 2 ? n : fib(n - 1) + fib(n - 2);
    }

    static String classify(int day) {
        switch (day) {
            case 0: case 6: return "weekend";
            case 1: case 2: case 3: case 4: case 5: return "weekday";
            default: throw new IllegalArgumentException("day " + day);
        }
    }

    static int parseOrMinusOne(String s) {
        try {
            return Integer.parseInt(s);
        } catch (NumberFormatException e) {
            return -1;
        } finally {
            seen++;
        }
    }

    private static int seen;

    static void deep(int n) {
        if (n == 0) {
            throw new IllegalStateException("bottom reached");
        }
        deep(n - 1);
    }

    /** Never called: shows the native probe's wrapper passing the verifier. */
    static native long neverCalled(int x);

    public static void main(String[] args) {
        Main m = new Main();
        for (int i = 1; i <= 10; i++) {
            m.bump(i);
        }
        System.out.println(m.name + " counter=" + m.counter);

        long total = 0;
        for (int i = 1; i < 2000; i++) {
            total += collatzSteps(i);
        }
        System.out.println("collatz total=" + total);
        System.out.println("fib(25)=" + fib(25));

        StringBuilder days = new StringBuilder();
        for (int d = 0; d < 8; d++) {
            try {
                days.append(classify(d).charAt(4));
            } catch (IllegalArgumentException e) {
                days.append('!').append(e.getMessage());
            }
        }
        System.out.println("days=" + days);
        System.out.println("parse=" + parseOrMinusOne("42") + "," + parseOrMinusOne("x") + " seen=" + seen);

        try {
            deep(50);
        } catch (IllegalStateException e) {
            System.out.println("caught: " + e.getMessage());
        }

        int[][] grid = new int[4][5];
        Object[] boxes = new Object[3];
        List<Integer> squares = new ArrayList<>();
        IntUnaryOperator square = x -> x * x;
        for (int i = 0; i < grid.length; i++) {
            for (int j = 0; j < grid[i].length; j++) {
                grid[i][j] = square.applyAsInt(i + j);
            }
            squares.add(grid[i][grid[i].length - 1]);
        }
        boxes[0] = squares;
        Map<String, Integer> words = new TreeMap<>();
        for (String w : "the quick brown fox jumps over the lazy dog the end".split(" ")) {
            words.merge(w, 1, Integer::sum);
        }
        boxes[1] = words;
        System.out.println("squares=" + boxes[0] + " words=" + boxes[1]);
    }
}
