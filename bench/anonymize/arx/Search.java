import java.io.*;
import java.nio.charset.StandardCharsets;
import java.nio.file.*;
import java.util.*;
import org.deidentifier.arx.*;
import org.deidentifier.arx.AttributeType.Hierarchy;
import org.deidentifier.arx.criteria.*;
import org.deidentifier.arx.metric.Metric;
import org.deidentifier.arx.metric.Metric.AggregateFunction;
import org.deidentifier.arx.risk.RiskModelPopulationUniqueness.PopulationUniquenessModel;

/** ARX's optimal full-domain node under one privacy model, for privdb's known-answer tests (issue 31).
 *  args: csv (';'), hierarchy dir (<column>.csv, ';'), qi (comma list), sensitive, subset-rows file, suppression limit.
 *  stdin: one model per line (the names of Known.java); stdout: the line, the node's levels in qi order, the loss. */
public class Search {
    static String csv, dir, sensitive; static String[] qi; static double limit; static Set<Integer> subset = new HashSet<>();

    static Data load(boolean withSensitive) throws IOException {
        Data data = Data.create(csv, StandardCharsets.UTF_8, ';');
        for (String q : qi) {
            data.getDefinition().setAttributeType(q, Hierarchy.create(dir + "/" + q + ".csv", StandardCharsets.UTF_8, ';'));
        }
        if (withSensitive) data.getDefinition().setAttributeType(sensitive, AttributeType.SENSITIVE_ATTRIBUTE);
        return data;
    }

    public static void main(String[] args) throws Exception {
        csv = args[0]; dir = args[1]; qi = args[2].split(","); sensitive = args[3];
        for (String s : Files.readAllLines(Paths.get(args[4]))) if (!s.isBlank()) subset.add(Integer.parseInt(s.trim()));
        limit = Double.parseDouble(args[5]);
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in));
        String line;
        while ((line = in.readLine()) != null) {
            String[] p = line.trim().split("\\s+");
            if (p.length == 0 || p[0].isEmpty()) continue;
            boolean sens = p[0].contains("beta") || p[0].contains("disclosure");
            Data data = load(sens);
            int n = data.getHandle().getNumRows();
            PrivacyCriterion c;
            switch (p[0]) {
            case "basic-beta": c = new BasicBLikeness(sensitive, Double.parseDouble(p[1])); break;
            case "enhanced-beta": c = new EnhancedBLikeness(sensitive, Double.parseDouble(p[1])); break;
            case "delta-disclosure": c = new DDisclosurePrivacy(sensitive, Double.parseDouble(p[1])); break;
            case "average-risk": c = new AverageReidentificationRisk(Double.parseDouble(p[1])); break;
            case "sample-uniqueness": c = new SampleUniqueness(Double.parseDouble(p[1])); break;
            case "population-uniqueness": c = new PopulationUniqueness(Double.parseDouble(p[1]),
                    PopulationUniquenessModel.valueOf(p[3]), ARXPopulationModel.create(n, Double.parseDouble(p[2]))); break;
            case "k-map-estimate": c = new KMap(Integer.parseInt(p[1]), Double.parseDouble(p[3]),
                    ARXPopulationModel.create(n, Double.parseDouble(p[2])), KMap.CellSizeEstimator.valueOf(p[4])); break;
            case "k-map": c = new KMap(Integer.parseInt(p[1]), DataSubset.create(data, subset)); break;
            case "d-presence": c = new DPresence(Double.parseDouble(p[1]), Double.parseDouble(p[2]), DataSubset.create(data, subset)); break;
            default: System.out.println(line.trim() + " => unknown"); continue;
            }
            ARXConfiguration config = ARXConfiguration.create();
            if (!p[0].equals("k-map") && !p[0].equals("d-presence")) config.addPrivacyModel(new KAnonymity(1));
            config.addPrivacyModel(c);
            config.setSuppressionLimit(limit);
            config.setQualityModel(Metric.createLossMetric(0.5d, AggregateFunction.ARITHMETIC_MEAN));
            ARXResult result = new ARXAnonymizer().anonymize(data, config);
            ARXLattice.ARXNode best = result.getGlobalOptimum();
            if (best == null) { System.out.println(line.trim() + " => none"); continue; }
            int[] levels = best.getTransformation();
            StringBuilder sb = new StringBuilder();
            for (int i = 0; i < qi.length; i++) sb.append(i == 0 ? "" : ",").append(levels[best.getQuasiIdentifyingAttributes().length == qi.length ? indexOf(best.getQuasiIdentifyingAttributes(), qi[i]) : i]);
            System.out.println(line.trim() + " => " + sb + " " + best.getHighestScore());
        }
    }

    static int indexOf(String[] a, String s) { for (int i = 0; i < a.length; i++) if (a[i].equals(s)) return i; return -1; }
}
