package suite;

import java.io.ByteArrayOutputStream;
import java.io.StringReader;
import org.apache.batik.transcoder.TranscoderInput;
import org.apache.batik.transcoder.TranscoderOutput;
import org.apache.batik.transcoder.image.PNGTranscoder;

/** Batik: parses and rasterizes SCALE generated SVG drawings (paths, gradients, text, transforms) to PNG. */
public final class Batik {
    public static void main(String[] args) throws Exception {
        int scale = Sum.scale(args, 10);
        Sum sum = new Sum();
        for (int i = 0; i < scale; i++) {
            PNGTranscoder t = new PNGTranscoder();
            t.addTranscodingHint(PNGTranscoder.KEY_WIDTH, 600f);
            t.addTranscodingHint(PNGTranscoder.KEY_HEIGHT, 600f);
            TranscoderInput in = new TranscoderInput(new StringReader(drawing(new Sum.Rng(i))));
            in.setURI("file:///suite/drawing" + i + ".svg");
            ByteArrayOutputStream png = new ByteArrayOutputStream();
            t.transcode(in, new TranscoderOutput(png));
            sum.add(png.toByteArray());
        }
        sum.print("batik");
    }

    static String drawing(Sum.Rng rng) {
        StringBuilder svg = new StringBuilder();
        svg.append("<svg xmlns='http://www.w3.org/2000/svg' width='500' height='500' viewBox='0 0 500 500'><defs>");
        for (int g = 0; g < 8; g++) {
            svg.append("<linearGradient id='g").append(g).append("' x1='0' y1='0' x2='1' y2='1'>")
                    .append("<stop offset='0' stop-color='rgb(").append(rng.next(256)).append(',').append(rng.next(256))
                    .append(',').append(rng.next(256)).append(")'/><stop offset='1' stop-color='rgb(")
                    .append(rng.next(256)).append(',').append(rng.next(256)).append(',').append(rng.next(256))
                    .append(")' stop-opacity='0.6'/></linearGradient>");
        }
        svg.append("</defs>");
        for (int s = 0; s < 600; s++) {
            int x = rng.next(500), y = rng.next(500);
            svg.append("<g transform='rotate(").append(rng.next(360)).append(' ').append(x).append(' ').append(y)
                    .append(")'>");
            switch (rng.next(4)) {
                case 0:
                    svg.append("<rect x='").append(x).append("' y='").append(y).append("' width='").append(5 + rng.next(60))
                            .append("' height='").append(5 + rng.next(60)).append("' rx='4' fill='url(#g").append(rng.next(8))
                            .append(")' stroke='black' stroke-width='0.5'/>");
                    break;
                case 1:
                    svg.append("<circle cx='").append(x).append("' cy='").append(y).append("' r='").append(3 + rng.next(40))
                            .append("' fill='url(#g").append(rng.next(8)).append(")' opacity='0.7'/>");
                    break;
                case 2:
                    svg.append("<path d='M").append(x).append(' ').append(y);
                    for (int k = 0; k < 6; k++) {
                        svg.append(" Q").append(rng.next(500)).append(' ').append(rng.next(500)).append(' ')
                                .append(rng.next(500)).append(' ').append(rng.next(500));
                    }
                    svg.append("' fill='none' stroke='rgb(").append(rng.next(256)).append(",40,90)' stroke-width='")
                            .append(1 + rng.next(4)).append("'/>");
                    break;
                default:
                    svg.append("<text x='").append(x).append("' y='").append(y).append("' font-family='sans-serif' font-size='")
                            .append(8 + rng.next(20)).append("'>").append(Sum.words(rng, 3)).append("</text>");
            }
            svg.append("</g>");
        }
        svg.append("</svg>");
        return svg.toString();
    }
}
