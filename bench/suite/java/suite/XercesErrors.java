package suite;

import java.io.StringReader;
import javax.xml.parsers.SAXParser;
import org.apache.xerces.jaxp.SAXParserFactoryImpl;
import org.xml.sax.Attributes;
import org.xml.sax.InputSource;
import org.xml.sax.SAXException;
import org.xml.sax.SAXParseException;
import org.xml.sax.helpers.DefaultHandler;

/**
 * The exception-heavy workload: Xerces parses SCALE x 5000 small generated documents. A third are
 * malformed (SAXParseException from deep in the scanner), and the handler aborts another third by
 * throwing when it meets a "stop" element, the usual way to end a SAX parse early.
 */
public final class XercesErrors {
    static final class Stop extends SAXException {
        Stop(String m) {
            super(m);
        }
    }

    public static void main(String[] args) throws Exception {
        int scale = Sum.scale(args, 10);
        Sum sum = new Sum();
        SAXParserFactoryImpl factory = new SAXParserFactoryImpl();
        factory.setNamespaceAware(true);
        SAXParser parser = factory.newSAXParser();
        Sum.Rng rng = new Sum.Rng(3);
        long errors = 0, stops = 0, ok = 0;
        // Scale 0 is the CI smoke size.
        for (int i = 0; i < (scale == 0 ? 300 : scale * 5000); i++) {
            String doc = document(rng, i % 3);
            int[] elements = {0};
            DefaultHandler handler = new DefaultHandler() {
                @Override
                public void startElement(String uri, String local, String q, Attributes a) throws SAXException {
                    elements[0]++;
                    if (local.equals("stop")) {
                        throw new Stop("stopped at element " + elements[0]);
                    }
                }
            };
            try {
                parser.reset();
                parser.parse(new InputSource(new StringReader(doc)), handler);
                ok++;
                sum.add("ok " + elements[0]);
            } catch (Stop e) {
                stops++;
                sum.add(e.getMessage());
            } catch (SAXParseException e) {
                errors++;
                sum.add(e.getLineNumber() + ":" + e.getColumnNumber() + " " + e.getMessage());
            }
        }
        System.out.println("ok " + ok + " stopped " + stops + " malformed " + errors);
        sum.print("xerces-errors");
    }

    static String document(Sum.Rng rng, int kind) {
        StringBuilder sb = new StringBuilder("<?xml version='1.0'?>\n<doc xmlns:a='urn:a'>");
        int n = 5 + rng.next(30);
        int bad = kind == 1 ? rng.next(n) : -1;
        int stop = kind == 2 ? rng.next(n) : -1;
        for (int i = 0; i < n; i++) {
            if (i == stop) {
                sb.append("<stop/>");
            }
            if (i == bad) {
                switch (rng.next(4)) {
                    case 0: sb.append("<item a:x='1' a:x='2'/>"); break;
                    case 1: sb.append("<item>&undefined;</item>"); break;
                    case 2: sb.append("<item></itme>"); break;
                    default: sb.append("<b:item/>");
                }
            }
            sb.append("<item id='").append(i).append("' a:w='").append(Sum.words(rng, 1)).append("'>")
                    .append(Sum.words(rng, 5)).append("</item>");
        }
        return sb.append("</doc>").toString();
    }
}
