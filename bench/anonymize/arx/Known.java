import java.io.*;
import java.nio.charset.StandardCharsets;
import java.nio.file.*;
import java.util.*;
import org.deidentifier.arx.*;
import org.deidentifier.arx.AttributeType.Hierarchy;
import org.deidentifier.arx.AttributeType.Hierarchy.DefaultHierarchy;
import org.deidentifier.arx.criteria.*;
import org.deidentifier.arx.risk.*;

/** Figures for privdb's known-answer tests: population uniqueness estimates of a table and the verdict of
 *  privacy models on a table already generalised (a one-node lattice, no suppression).
 *  args: csv (';'), qi (comma list), sensitive, subset-rows file; spec lines on stdin. */
public class Known {
    static String csv; static String[] qi; static String sensitive; static Set<Integer> subset = new HashSet<>(); static boolean useSensitive;

    static Data load() throws IOException {
        Data data = Data.create(csv, StandardCharsets.UTF_8, ';');
        DataHandle h = data.getHandle();
        for (String q : qi) {
            int col = h.getColumnIndexOf(q);
            DefaultHierarchy hier = Hierarchy.create();
            Set<String> seen = new HashSet<>();
            for (int r = 0; r < h.getNumRows(); r++) {
                String v = h.getValue(r, col);
                if (seen.add(v)) hier.add(v, "*");
            }
            data.getDefinition().setAttributeType(q, hier);
            data.getDefinition().setMaximumGeneralization(q, 0);
        }
        if (useSensitive) data.getDefinition().setAttributeType(sensitive, AttributeType.SENSITIVE_ATTRIBUTE);
        return data;
    }

    static boolean holds(PrivacyCriterion c, boolean needsK) throws IOException {
        Data data = load();
        ARXConfiguration config = ARXConfiguration.create();
        if (needsK) config.addPrivacyModel(new KAnonymity(1));
        config.addPrivacyModel(c);
        config.setSuppressionLimit(0d);
        ARXResult result = new ARXAnonymizer().anonymize(data, config);
        return result.getGlobalOptimum() != null;
    }

    public static void main(String[] args) throws Exception {
        csv = args[0]; qi = args[1].split(","); sensitive = args[2];
        if (args.length > 3) for (String s : Files.readAllLines(Paths.get(args[3]))) if (!s.isBlank()) subset.add(Integer.parseInt(s.trim()));
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in));
        String line;
        while ((line = in.readLine()) != null) {
            String[] p = line.trim().split("\\s+");
            if (p.length == 0 || p[0].isEmpty()) continue;
            String out;
            useSensitive = p[0].contains("beta") || p[0].contains("disclosure");
            switch (p[0]) {
            case "estimate": {
                Data data = load();
                int n = data.getHandle().getNumRows();
                ARXPopulationModel pm = ARXPopulationModel.create(n, Double.parseDouble(p[1]));
                RiskModelPopulationUniqueness u = data.getHandle().getRiskEstimator(pm).getPopulationBasedUniquenessRisk();
                out = String.format(Locale.ROOT, "%.17g %.17g %.17g %.17g %s", u.getFractionOfUniqueTuplesPitman(),
                    u.getFractionOfUniqueTuplesZayatz(), u.getFractionOfUniqueTuplesSNB(), u.getFractionOfUniqueTuplesDankar(),
                    u.getPopulationUniquenessModel());
                break; }
            case "basic-beta": out = "" + holds(new BasicBLikeness(sensitive, Double.parseDouble(p[1])), true); break;
            case "enhanced-beta": out = "" + holds(new EnhancedBLikeness(sensitive, Double.parseDouble(p[1])), true); break;
            case "delta-disclosure": out = "" + holds(new DDisclosurePrivacy(sensitive, Double.parseDouble(p[1])), true); break;
            case "average-risk": out = "" + holds(new AverageReidentificationRisk(Double.parseDouble(p[1])), true); break;
            case "sample-uniqueness": out = "" + holds(new SampleUniqueness(Double.parseDouble(p[1])), true); break;
            case "population-uniqueness": {
                Data data = load();
                int n = data.getHandle().getNumRows();
                RiskModelPopulationUniqueness.PopulationUniquenessModel m = RiskModelPopulationUniqueness.PopulationUniquenessModel.valueOf(p[3]);
                out = "" + holds(new PopulationUniqueness(Double.parseDouble(p[1]), m, ARXPopulationModel.create(n, Double.parseDouble(p[2]))), true);
                break; }
            case "k-map-estimate": {
                Data data = load();
                int n = data.getHandle().getNumRows();
                KMap.CellSizeEstimator e = KMap.CellSizeEstimator.valueOf(p[4]);
                KMap km = new KMap(Integer.parseInt(p[1]), Double.parseDouble(p[3]), ARXPopulationModel.create(n, Double.parseDouble(p[2])), e);
                boolean ok = holds(km, true);
                out = ok + " " + km.getDerivedK();
                break; }
            case "k-map": {
                Data data = load();
                out = "" + holdsSubset(new KMap(Integer.parseInt(p[1]), DataSubset.create(data, subset)), data); break; }
            case "d-presence": {
                Data data = load();
                out = "" + holdsSubset(new DPresence(Double.parseDouble(p[1]), Double.parseDouble(p[2]), DataSubset.create(data, subset)), data); break; }
            default: out = "unknown " + p[0];
            }
            System.out.println(line.trim() + " => " + out);
        }
    }

    static boolean holdsSubset(PrivacyCriterion c, Data data) throws IOException {
        ARXConfiguration config = ARXConfiguration.create();
        config.addPrivacyModel(c);
        config.setSuppressionLimit(0d);
        return new ARXAnonymizer().anonymize(data, config).getGlobalOptimum() != null;
    }
}
