import java.io.*;
import java.lang.reflect.*;
import java.util.*;
import com.carrotsearch.hppc.IntIntOpenHashMap;
import de.linearbits.newtonraphson.*;
import org.deidentifier.arx.*;
import org.deidentifier.arx.risk.*;

/** ARX's Pitman estimate of a class-size histogram, and what each of its two equation forms finds alone.
 *  stdin: one histogram a line, "N size:count size:count ..." (N the population); stdout: the line's
 *  estimate (fraction of N, 0 = none), then the closed form's root from ARX's starts, the term-by-term
 *  form's root and that form's residual at the closed form's root. */
public class Pitman {
    public static void main(String[] args) throws Exception {
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in));
        String line;
        Class<?> cls = Class.forName("org.deidentifier.arx.risk.ModelPitman");
        Constructor<?> ctor = cls.getDeclaredConstructors()[0];
        ctor.setAccessible(true);
        Method closed = cls.getDeclaredMethod("getMasterFunctionClosed", int[].class, double.class, double.class);
        Method iter = cls.getDeclaredMethod("getMasterFunctionIterative", int[].class, double.class, double.class);
        Method obj = cls.getDeclaredMethod("getObjectFunctionsIterative", int[].class, double.class, double.class);
        Method cons = cls.getDeclaredMethod("getConstraint");
        for (Method m : new Method[] {closed, iter, obj, cons}) m.setAccessible(true);
        while ((line = in.readLine()) != null) {
            String[] p = line.trim().split("\\s+");
            if (p.length < 2) continue;
            long pop = Long.parseLong(p[0]);
            IntIntOpenHashMap dist = new IntIntOpenHashMap();
            for (int i = 1; i < p.length; i++) { String[] kv = p[i].split(":"); dist.put(Integer.parseInt(kv[0]), Integer.parseInt(kv[1])); }
            RiskModelHistogram h = new RiskModelHistogram(dist);
            ARXPopulationModel model = ARXPopulationModel.create(pop);
            ARXSolverConfiguration config = ARXSolverConfiguration.create();
            RiskModelPopulationUniqueness u = new RiskModelPopulationUniqueness(model, h, config);
            double est = u.getFractionOfUniqueTuples(RiskModelPopulationUniqueness.PopulationUniquenessModel.PITMAN);
            Object pm = ctor.newInstance(model, h, config, new org.deidentifier.arx.common.WrappedBoolean());
            int[] classes = h.getHistogram();
            double c1 = 0, c2 = 0, uu = h.getNumClasses(), n = h.getNumRecords();
            for (int i = 0; i < classes.length; i += 2) { if (classes[i] == 1) c1 = classes[i + 1]; if (classes[i] == 2) c2 = classes[i + 1]; }
            c2 = c2 != 0 ? c2 : 1;
            double c = (c1 * (c1 - 1)) / c2;
            double t = ((n * uu * c) - (c1 * (n - 1) * ((2 * uu) + c))) / (((2 * c1 * uu) + (c1 * c)) - (n * c));
            double a = ((t * (c1 - n)) + ((n - 1) * c1)) / (n * uu);
            Constraint2D k = (Constraint2D) cons.invoke(pm);
            @SuppressWarnings("unchecked")
            Vector2D rc = new NewtonRaphson2D((Function<Vector2D, Pair<Vector2D, SquareMatrix2D>>) closed.invoke(pm, classes, uu, n), k).configure(config).solve(new Vector2D(t, a));
            @SuppressWarnings("unchecked")
            Vector2D ri = new NewtonRaphson2D((Function<Vector2D, Pair<Vector2D, SquareMatrix2D>>) iter.invoke(pm, classes, uu, n), k).configure(config).solve(new Vector2D(t, a));
            @SuppressWarnings("unchecked")
            Vector2D test = ((Function<Vector2D, Vector2D>) obj.invoke(pm, classes, uu, n)).evaluate(rc);
            System.out.println(est + " closed " + rc.x + " " + rc.y + " iterative " + ri.x + " " + ri.y + " residual " + test.x + " " + test.y);
        }
    }
}
