package suite;

import org.apache.lucene.analysis.standard.StandardAnalyzer;
import org.apache.lucene.document.Document;
import org.apache.lucene.document.Field;
import org.apache.lucene.document.NumericDocValuesField;
import org.apache.lucene.document.StringField;
import org.apache.lucene.document.TextField;
import org.apache.lucene.index.DirectoryReader;
import org.apache.lucene.index.IndexWriter;
import org.apache.lucene.index.IndexWriterConfig;
import org.apache.lucene.index.LogDocMergePolicy;
import org.apache.lucene.index.SerialMergeScheduler;
import org.apache.lucene.index.Term;
import org.apache.lucene.search.BooleanClause;
import org.apache.lucene.search.BooleanQuery;
import org.apache.lucene.search.IndexSearcher;
import org.apache.lucene.search.PhraseQuery;
import org.apache.lucene.search.PrefixQuery;
import org.apache.lucene.search.Query;
import org.apache.lucene.search.ScoreDoc;
import org.apache.lucene.search.TermQuery;
import org.apache.lucene.search.TopDocs;
import org.apache.lucene.store.ByteBuffersDirectory;

/** Lucene: indexes SCALE x 2000 generated documents in memory, then runs term, boolean, phrase and prefix queries. */
public final class Lucene {
    public static void main(String[] args) throws Exception {
        int scale = Sum.scale(args, 10);
        Sum sum = new Sum();
        ByteBuffersDirectory dir = new ByteBuffersDirectory();
        IndexWriterConfig config = new IndexWriterConfig(new StandardAnalyzer());
        // One thread, fixed flush points and merges: the same segments on every run.
        config.setMergeScheduler(new SerialMergeScheduler());
        config.setMergePolicy(new LogDocMergePolicy());
        config.setMaxBufferedDocs(5000);
        config.setRAMBufferSizeMB(IndexWriterConfig.DISABLE_AUTO_FLUSH);
        config.setUseCompoundFile(false);
        Sum.Rng rng = new Sum.Rng(7);
        try (IndexWriter writer = new IndexWriter(dir, config)) {
            for (int i = 0; i < scale * 2000; i++) {
                Document d = new Document();
                d.add(new StringField("id", "doc" + i, Field.Store.YES));
                d.add(new TextField("title", Sum.words(rng, 4), Field.Store.YES));
                d.add(new TextField("body", Sum.words(rng, 80 + rng.next(120)), Field.Store.NO));
                d.add(new NumericDocValuesField("rank", rng.next(1000)));
                writer.addDocument(d);
            }
            writer.forceMerge(1);
        }
        try (DirectoryReader reader = DirectoryReader.open(dir)) {
            IndexSearcher searcher = new IndexSearcher(reader);
            String[] words = Sum.words(new Sum.Rng(99), 400).split(" ");
            for (int round = 0; round < 10; round++) {
                for (int q = 0; q < words.length - 2; q += 3) {
                    Query query;
                    switch ((q / 3 + round) % 4) {
                        case 0:
                            query = new TermQuery(new Term("body", words[q]));
                            break;
                        case 1:
                            query = new BooleanQuery.Builder()
                                    .add(new TermQuery(new Term("body", words[q])), BooleanClause.Occur.MUST)
                                    .add(new TermQuery(new Term("title", words[q + 1])), BooleanClause.Occur.SHOULD)
                                    .add(new TermQuery(new Term("body", words[q + 2])), BooleanClause.Occur.MUST_NOT)
                                    .build();
                            break;
                        case 2:
                            query = new PhraseQuery("body", words[q], words[q + 1]);
                            break;
                        default:
                            query = new PrefixQuery(new Term("body", words[q].substring(0, 2)));
                    }
                    TopDocs top = searcher.search(query, 10);
                    StringBuilder sb = new StringBuilder().append(top.totalHits.value);
                    for (ScoreDoc sd : top.scoreDocs) {
                        sb.append(' ').append(searcher.doc(sd.doc).get("id")).append(':')
                                .append(Float.floatToIntBits(sd.score));
                    }
                    sum.add(sb.toString());
                }
            }
        }
        sum.print("lucene");
    }
}
