package p;

public class Main implements Runnable {
    public void run() {}

    public static void main(String[] args) {}
}
