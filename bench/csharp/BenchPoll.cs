// BenchPoll.cs: the polling API per frame through the C# binding (P/Invoke), the managed
// counterpart of bench/bench_client_api.c: same server, same agents, same loop.
//
//   mono BenchPoll.exe STEERD_BINARY [AGENTS (1000)] [FRAMES (3000)]
using System;
using System.Diagnostics;
using System.Text.RegularExpressions;
using System.Threading;
using Steerd;

static class BenchPoll
{
    static int StartServer(string steerd, out Process p)
    {
        var si = new ProcessStartInfo(steerd, "--bind 127.0.0.1 --port 0 --http-port 0 --no-demo --rate-limit 100000 " +
                                              "--rate-burst 100000 --max-agents-per-client 100000")
        {
            UseShellExecute = false, RedirectStandardError = true, RedirectStandardOutput = true,
        };
        p = Process.Start(si);
        var re = new Regex(@"listening on 127\.0\.0\.1:(\d+)");
        string line;
        while ((line = p.StandardError.ReadLine()) != null)
        {
            var m = re.Match(line);
            if (m.Success)
            {
                // Keep draining the log so the server never blocks on a full pipe.
                Process server = p;
                new Thread(() => { while (server.StandardError.ReadLine() != null) { } }) { IsBackground = true }.Start();
                return int.Parse(m.Groups[1].Value);
            }
        }
        throw new Exception("the server did not start");
    }

    static void Populate(int port, int agents)
    {
        // Delta snapshots of an empty corner: the spawner's socket is not flooded with
        // snapshots of the growing world while it waits for its replies.
        var cfg = SteerdConfig.Default();
        cfg.Snapshots = SteerdSnapshots.Delta;
        using (var c = new SteerdClient(cfg))
        {
            c.Connect("127.0.0.1", port, "spawner");
            c.WaitReply(c.SetView(new SteerdView { Kind = SteerdViewKind.Centre, CentreX = 450f, CentreY = 450f, Radius = 1f }), 10000);
            ulong rng = 7;
            uint last = 0;
            for (int i = 0; i < agents; i++)
            {
                unchecked { rng = rng * 6364136223846793005UL + 1442695040888963407UL; }
                float x = (float)((rng >> 40) % 200) - 100f;
                unchecked { rng = rng * 6364136223846793005UL + 1442695040888963407UL; }
                float y = (float)((rng >> 40) % 200) - 100f;
                var s = SteerdSpawnDesc.At(SteerdModel.Dynamic, x, y);
                s.Present = SteerdSpawnFlags.Behaviour;
                s.Behaviour = new SteerdBehaviour { Kind = SteerdBehaviourKind.Wander };
                last = c.Spawn(s);
                if (i % 100 == 99 || i + 1 == agents)
                {
                    SteerdReply r;
                    try { r = c.WaitReply(last, 10000); }
                    catch (SteerdException e)
                    {
                        SteerdStats st = c.Stats;
                        throw new Exception("spawn " + i + " (request " + last + "): " + e.Message + "; sent " + st.CommandsSent +
                                            " acks " + st.Acks + " errors " + st.Errors + " replies dropped " + st.RepliesDropped +
                                            " state " + c.State);
                    }
                    if (r.IsError)
                        throw new Exception("spawn refused: " + r);
                }
            }
            c.Disconnect(1000);
        }
    }

    static void Run(int port, int agents, int frames, SteerdSnapshots mode)
    {
        var cfg = SteerdConfig.Default();
        cfg.MaxAgents = (uint)(agents + 64);
        cfg.Snapshots = mode;
        using (var c = new SteerdClient(cfg))
        {
            c.Connect("127.0.0.1", port, "bench");
            var states = new SteerdAgentState[agents + 64];
            SteerdRenderInfo info;
            var warm = Stopwatch.StartNew();
            while (warm.ElapsedMilliseconds < 2000)
            {
                c.Update(5);
                c.PollStates(states, out info);
            }
            var poll = new double[frames];
            double updateSum = 0;
            int got = 0;
            long t0, t1, t2;
            double tickUs = 1e6 / Stopwatch.Frequency;
            for (int f = 0; f < frames; f++)
            {
                t0 = Stopwatch.GetTimestamp();
                c.Update(0);
                t1 = Stopwatch.GetTimestamp();
                got = c.PollStates(states, out info);
                t2 = Stopwatch.GetTimestamp();
                updateSum += (t1 - t0) * tickUs;
                poll[f] = (t2 - t1) * tickUs;
            }
            double sum = 0;
            foreach (double v in poll) sum += v;
            Array.Sort(poll);
            double mean = sum / frames;
            Console.WriteLine("| C# Mono  | {0,-5} | {1,6} | {2,6} | {3,8:F1} | {4,8:F1} | {5,8:F1} | {6,7:F1} | {7,9:F1} |",
                              mode == SteerdSnapshots.Delta ? "delta" : "full", got, frames, mean, poll[frames / 2],
                              poll[frames * 99 / 100], got > 0 ? poll[frames / 2] * 1000 / got : 0, updateSum / frames);
        }
    }

    static int Main(string[] args)
    {
        int agents = args.Length > 1 ? int.Parse(args[1]) : 1000;
        int frames = args.Length > 2 ? int.Parse(args[2]) : 3000;
        Process server;
        int port = StartServer(args[0], out server);
        try
        {
            Populate(port, agents);
            Console.WriteLine("SteerdClient.PollStates through P/Invoke ({0}), {1} wandering agents, {2} frames after 2 s warm-up",
                              Type.GetType("Mono.Runtime") != null ? "Mono" : ".NET", agents, frames);
            Console.WriteLine("| caller   | mode  | agents | frames | poll mean us | median us | p99 us | ns/agent (median) | update mean us |");
            Console.WriteLine("|---|---|---:|---:|---:|---:|---:|---:|---:|");
            Run(port, agents, frames, SteerdSnapshots.Full);
            Run(port, agents, frames, SteerdSnapshots.Delta);
        }
        finally
        {
            server.Kill();
            server.WaitForExit(5000);
        }
        return 0;
    }
}
