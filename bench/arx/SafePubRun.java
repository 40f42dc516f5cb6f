// Runs ARX's SafePub (EDDifferentialPrivacy) on a CSV and prints the released node and which rows it kept.
// Used by bench/publish_arx.py; compiled against an ARX build given on the classpath (see that module).
// Arguments: data.csv hierarchies-dir qi1,qi2,... epsilon delta epsilon-search steps metric target|- node|- runs
// Output, per run: "node <qi>=<level> ..." then "kept <0/1 string, one per input row>" and "seconds <s>".

import java.io.File;
import java.nio.charset.StandardCharsets;

import org.deidentifier.arx.ARXAnonymizer;
import org.deidentifier.arx.ARXConfiguration;
import org.deidentifier.arx.ARXResult;
import org.deidentifier.arx.AttributeType;
import org.deidentifier.arx.AttributeType.Hierarchy;
import org.deidentifier.arx.Data;
import org.deidentifier.arx.DataGeneralizationScheme;
import org.deidentifier.arx.DataHandle;
import org.deidentifier.arx.criteria.EDDifferentialPrivacy;
import org.deidentifier.arx.metric.Metric;

public class SafePubRun {
    public static void main(String[] args) throws Exception {
        String csv = args[0];
        String dir = args[1];
        String[] qi = args[2].split(",");
        double epsilon = Double.parseDouble(args[3]);
        double delta = Double.parseDouble(args[4]);
        double epsilonSearch = Double.parseDouble(args[5]);
        int steps = Integer.parseInt(args[6]);
        String metric = args[7];
        String target = args[8];
        String node = args[9];
        int runs = Integer.parseInt(args[10]);
        for (int run = 0; run < runs; run++) {
            Data data = Data.create(csv, StandardCharsets.UTF_8, ';');
            for (String column : qi) {
                Hierarchy h = Hierarchy.create(new File(dir, column + ".csv").getPath(), StandardCharsets.UTF_8, ';');
                data.getDefinition().setAttributeType(column, h);
            }
            if (!target.equals("-")) {
                data.getDefinition().setAttributeType(target, AttributeType.INSENSITIVE_ATTRIBUTE);
                data.getDefinition().setResponseVariable(target, true);
            }
            ARXConfiguration config = ARXConfiguration.create();
            DataGeneralizationScheme scheme = null;
            if (!node.equals("-")) {
                scheme = DataGeneralizationScheme.create(data);
                String[] levels = node.split(",");
                for (int i = 0; i < qi.length; i++) {
                    scheme = scheme.generalize(qi[i], Integer.parseInt(levels[i]));
                }
            }
            config.addPrivacyModel(new EDDifferentialPrivacy(epsilon, delta, scheme, false));
            config.setSuppressionLimit(1d);
            if (scheme == null) {
                config.setDPSearchBudget(epsilonSearch);
                config.setHeuristicSearchStepLimit(steps);
            }
            if (metric.equals("classification")) {
                config.setQualityModel(Metric.createClassificationMetric());
            } else {
                config.setQualityModel(Metric.createLossMetric());
            }
            long started = System.nanoTime();
            ARXResult result = new ARXAnonymizer().anonymize(data, config);
            double seconds = (System.nanoTime() - started) / 1e9;
            DataHandle out = result.getOutput();
            StringBuilder line = new StringBuilder("node");
            for (String column : qi) {
                line.append(' ').append(column).append('=')
                    .append(result.getGlobalOptimum().getGeneralization(column));
            }
            System.out.println(line);
            StringBuilder kept = new StringBuilder("kept ");
            for (int row = 0; row < out.getNumRows(); row++) {
                kept.append(out.isOutlier(row) ? '0' : '1');
            }
            System.out.println(kept);
            System.out.println("seconds " + seconds);
        }
    }
}
