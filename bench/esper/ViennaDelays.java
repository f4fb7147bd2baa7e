// The classic-CEP baseline of bench/streaming.py: the running example's pattern in Esper (EPL),
// on the same JSON Lines files, in event-time order (Esper's clock advanced to each event's time).
//
//   java -cp <esper jars> bench/esper/ViennaDelays.java MODE RANGE_MINUTES SUBWAYS STOPS FILE...
//
// MODE "all": every pair of delays (skip-till-any-match, `every a -> every b`), the CQELS-CEP
// SEQ; "next": `every a -> b` (skip-till-next-match, Esper's usual pattern), which pairs each delay
// only with the next one. SUBWAYS / STOPS: comma-separated local names, or @FILE holding them (the static side — which
// vehicles are subways, which stops reach the centre by subway — is given, not computed here).
// Prints: events, distinct answers (stop, t1, t2), seconds (reading, parsing and running the events)
// and compile_seconds (compiling and deploying the EPL; JVM start excluded from both).
import com.espertech.esper.common.client.EPCompiled;
import com.espertech.esper.common.client.configuration.Configuration;
import com.espertech.esper.compiler.client.CompilerArguments;
import com.espertech.esper.compiler.client.EPCompilerProvider;
import com.espertech.esper.runtime.client.EPDeployment;
import com.espertech.esper.runtime.client.EPRuntime;
import com.espertech.esper.runtime.client.EPRuntimeProvider;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.*;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

public class ViennaDelays {
    static final Pattern LINE = Pattern.compile(
        "\\{\"s\": \":([^\"]*)\", \"p\": \":(delayAt|arriveAt)\", \"o\": \":([^\"]*)\", \"t\": (-?[0-9]+)\\}");

    public static void main(String[] args) throws Exception {
        String mode = args[0];
        long range = Long.parseLong(args[1]);
        Set<String> subways = names(listed(args[2])), stops = names(listed(args[3]));
        long started = System.nanoTime();
        Configuration config = new Configuration();
        config.getRuntime().getThreading().setInternalTimerEnabled(false);
        Map<String, Object> props = new LinkedHashMap<>();
        props.put("v", String.class); props.put("s", String.class); props.put("t", Long.class);
        // the static side as two flags each event carries (a hash lookup per event): an EPL `in`
        // list of 33,333 subways is more code than Esper's compiler takes
        props.put("subway", Boolean.class); props.put("reaches", Boolean.class);
        config.getCommon().addEventType("Delay", props);
        config.getCommon().addEventType("Arrive", props);
        String second = mode.equals("all") ? "every b" : "b";
        String epl = "@name('q') select a.s as s, a.t as t1, b.t as t2 from pattern [every a=Delay(subway, reaches) -> " + second + "=Delay(v = a.v, s = a.s, t > a.t, t <= a.t + " + range
            + ") where timer:within(" + (range + 1) + " min)]";
        EPCompiled compiled = EPCompilerProvider.getCompiler().compile(epl, new CompilerArguments(config));
        EPRuntime runtime = EPRuntimeProvider.getDefaultRuntime(config);
        runtime.getEventService().advanceTime(Long.MIN_VALUE / 4);
        EPDeployment deployment = runtime.getDeploymentService().deploy(compiled);
        Set<String> answers = new HashSet<>();
        runtime.getDeploymentService().getStatement(deployment.getDeploymentId(), "q").addListener(
            (newEvents, oldEvents, statement, rt) -> {
                for (var e : newEvents) answers.add(e.get("s") + "|" + e.get("t1") + "|" + e.get("t2"));
            });
        double compileSeconds = (System.nanoTime() - started) / 1e9;
        long running = System.nanoTime();
        long events = 0, clock = Long.MIN_VALUE;
        for (int i = 4; i < args.length; i++) {
            for (String line : Files.readAllLines(Path.of(args[i]))) {
                Matcher m = LINE.matcher(line);
                if (!m.matches()) throw new IllegalArgumentException(args[i] + ": unexpected line " + line);
                long t = Long.parseLong(m.group(4));
                if (t * 60_000 > clock) {
                    clock = t * 60_000;
                    runtime.getEventService().advanceTime(clock);
                }
                Map<String, Object> event = new HashMap<>();
                event.put("v", m.group(1)); event.put("s", m.group(3)); event.put("t", t);
                event.put("subway", subways.contains(m.group(1))); event.put("reaches", stops.contains(m.group(3)));
                runtime.getEventService().sendEventMap(event, m.group(2).equals("delayAt") ? "Delay" : "Arrive");
                events++;
            }
        }
        double seconds = (System.nanoTime() - running) / 1e9;
        System.out.println("{\"events\": " + events + ", \"answers\": " + answers.size() + ", \"seconds\": " + seconds
            + ", \"compile_seconds\": " + compileSeconds + "}");
        runtime.destroy();
    }

    // "@FILE": the comma-separated names in FILE (a large fleet's subways exceed a command line)
    static String listed(String arg) throws java.io.IOException {
        return arg.startsWith("@") ? Files.readString(Path.of(arg.substring(1))).trim() : arg;
    }

    static Set<String> names(String csv) {
        return new HashSet<>(Arrays.asList(csv.split(",")));
    }
}
