import java.text.DecimalFormat;
import java.text.DecimalFormatSymbols;
import java.util.Locale;

/**
 * The page the Jetty server's report servlet renders per request, and the load client renders
 * again to check the answer: {@code rows} lines of formatted numbers and text (String.format,
 * DecimalFormat, StringBuilder), the work of a template rendering a table.
 */
public final class Report {
    private Report() {
    }

    static final String[] WORDS = {"alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf",
        "hotel", "india", "juliett", "kilo", "lima", "mike", "november", "oscar", "papa"};

    public static String render(long seed, int rows) {
        DecimalFormat money = new DecimalFormat("#,##0.00", DecimalFormatSymbols.getInstance(Locale.ROOT));
        DecimalFormat share = new DecimalFormat("0.0%", DecimalFormatSymbols.getInstance(Locale.ROOT));
        StringBuilder sb = new StringBuilder(rows * 96 + 128);
        sb.append(String.format(Locale.ROOT, "report %d, %d rows%n", seed, rows));
        long x = seed * 0x9E3779B97F4A7C15L + 1;
        double total = 0;
        long units = 0;
        for (int i = 0; i < rows; i++) {
            x = x * 6364136223846793005L + 1442695040888963407L;
            int qty = (int) ((x >>> 33) % 1000);
            double price = ((x >>> 13) & 0xFFFFF) / 100.0;
            String name = WORDS[(int) ((x >>> 7) & 15)] + '-' + WORDS[(int) ((x >>> 11) & 15)];
            double amount = qty * price;
            total += amount;
            units += qty;
            sb.append(String.format(Locale.ROOT, "%5d | %-18s | %6d x %10.2f = ", i, name, qty, price))
                .append(money.format(amount))
                .append(" | ")
                .append(share.format(qty / 1000.0))
                .append(" | ")
                .append(Long.toHexString(x >>> 40))
                .append('\n');
        }
        sb.append(String.format(Locale.ROOT, "total %d units, %s, mean %.3f%n", units, money.format(total),
            rows == 0 ? 0.0 : total / rows));
        return sb.toString();
    }
}
