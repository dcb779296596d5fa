// SteerdClient.cs: the C# binding of libsteerd-client (client-sample/include/steerd/client.h).
//
// One file, no dependencies beyond System: drop it into a Unity project (Assets/Steerd/)
// next to the native library in Assets/Plugins/ (see README.md). Written for .NET
// Standard 2.0 and IL2CPP:
//   - P/Invoke only, into a C ABI with plain structs; every struct here is blittable
//     except SteerdReply (two fixed text buffers, marshalled by value);
//   - no delegates passed to native code, so no managed code ever runs on a native
//     thread (the library starts none anyway): the game polls from its main thread;
//   - polling fills arrays the caller owns and reuses (no allocation per frame), pinned for
//     the call (GCHandle) so that nothing is copied element by element;
//   - strings go in as NUL-terminated UTF-8 byte arrays, so the platform's "ANSI"
//     code page never matters.
//
// Axes: the server is 2D, x right, y up, angles counter-clockwise (PROTOCOL.md 3).
// SteerdAxes converts for Unity (x-z plane); see README.md for Godot and Unreal.
using System;
using System.Runtime.InteropServices;
using System.Text;

namespace Steerd
{
    /// <summary>Error codes of the library (negative), as steerdc_error.</summary>
    public enum SteerdError
    {
        Ok = 0,
        InvalidArgument = -1,
        OutOfMemory = -2,
        Enet = -3,
        Resolve = -4,
        TimedOut = -5,
        NotConnected = -6,
        Disconnected = -7,
        Encode = -8,
        Send = -9,
        Reply = -10,
        Protocol = -11,
        Busy = -12,
        NoData = -13,
        NoEntry = -14,
    }

    public enum SteerdState : uint { Idle = 0, Connecting = 1, Connected = 2, Disconnected = 3 }
    public enum SteerdSnapshots : uint { Full = 0, Delta = 1 }
    public enum SteerdModel : uint { Kinematic = 0, Dynamic = 1, Heading = 2 }

    public enum SteerdBehaviourKind : uint
    {
        None = 0, Seek = 1, Flee = 2, Arrive = 3, Align = 4, VelocityMatch = 5, Face = 6,
        LookWhereGoing = 7, Pursue = 8, Evade = 9, Interpose = 10, Wander = 11, FollowPath = 12,
    }

    public enum SteerdPathMode : uint { Once = 0, Loop = 1, PingPong = 2 }
    public enum SteerdCornering : uint { None = 0, Arc = 1, Lazy = 2 }
    public enum SteerdRenderMode : uint { Interpolate = 0, Extrapolate = 1, HoldNewest = 2, HoldOldest = 3 }
    public enum SteerdEventCode : uint { Arrived = 0, Waypoint = 1, PathFinished = 2, Reversed = 3, Spawned = 4, Despawned = 5, Stuck = 6, Planned = 7, Replanned = 8, Unreachable = 9 }
    public enum SteerdCommand : uint { Error = 0, Spawn = 2, Despawn = 3, SetBehaviour = 4, SetPath = 5, SetParams = 6, Stop = 7, Query = 8, Ping = 9, View = 10, AddObstacle = 12, RemoveObstacle = 13 }
    public enum SteerdObstacleKind : uint { Circle = 0, Polygon = 1, Wall = 2 }
    public enum SteerdViewKind : uint { All = 0, Centre = 1, Follow = 2 }

    [Flags]
    public enum SteerdLimitFlags : uint
    {
        None = 0, MaxSpeed = 1, MaxAcceleration = 2, MaxRotation = 4, MaxAngularAcceleration = 8, Radius = 16,
    }

    [Flags]
    public enum SteerdBehaviourFlags : uint
    {
        None = 0, Target = 1, TargetAgent = 2, TargetAgent2 = 4, Orientation = 8, Facing = 16, Combine = 32,
        SeparationWeight = 64, MaxNeighbours = 128,
    }

    [Flags]
    public enum SteerdSpawnFlags : uint { None = 0, Orientation = 1, Velocity = 2, Limits = 4, Behaviour = 8 }

    /// <summary>Bits of SteerdParams.Present, one per field in order (PROTOCOL.md 5.2).</summary>
    [Flags]
    public enum SteerdParamFlags : uint
    {
        None = 0, TimeToTarget = 1 << 0, TargetRadius = 1 << 1, SlowRadius = 1 << 2, KinematicTimeToTarget = 1 << 3,
        AlignTargetRadius = 1 << 4, AlignSlowRadius = 1 << 5, AlignTimeToTarget = 1 << 6, MaxPrediction = 1 << 7,
        PanicRadius = 1 << 8, WanderOffset = 1 << 9, WanderRadius = 1 << 10, WanderRate = 1 << 11,
        SeparationRadius = 1 << 12, TurnTriggerDistance = 1 << 13, PathRecoverStrength = 1 << 14,
    }

    [StructLayout(LayoutKind.Sequential)]
    public struct SteerdConfig
    {
        public uint MaxAgents;
        public SteerdSnapshots Snapshots;
        public uint ConnectTimeoutMs;
        public uint PingIntervalMs;
        public uint EventQueue;
        public uint ReplyQueue;
        public uint MinDelayUs;
        public uint MaxDelayUs;
        public uint MaxExtrapolationUs;
        public uint SamplesPerAgent;

        /// <summary>The library's defaults (steerdc_config_init).</summary>
        public static SteerdConfig Default()
        {
            SteerdConfig c;
            Native.steerdc_config_init(out c);
            return c;
        }
    }

    /// <summary>An agent at the render time: 32 bytes, as steerdc_agent_state.</summary>
    [StructLayout(LayoutKind.Sequential)]
    public struct SteerdAgentState
    {
        public uint Id;
        public SteerdRenderMode Mode;
        public float X, Y;     // m
        public float Theta;    // rad, counter-clockwise from +x
        public float Vx, Vy;   // m/s
        public float AgeMs;    // < 0 while interpolating
    }

    [StructLayout(LayoutKind.Sequential)]
    public struct SteerdRenderInfo
    {
        public long RenderTimeUs;  // server time the states are at
        public ulong NewestTick;
        public uint AgentCount;    // agents in the buffer
        public float DelayMs;
        public float JitterMs;
        public uint Reserved;
    }

    [StructLayout(LayoutKind.Sequential)]
    public struct SteerdEvent
    {
        public ulong Tick;
        public SteerdEventCode Code;
        public uint Agent;
        public uint Data;
        public uint Reserved;
    }

    /// <summary>The ACK or ERROR of a command (steerdc_reply).</summary>
    [StructLayout(LayoutKind.Sequential)]
    public struct SteerdReply
    {
        public uint RequestId;
        public SteerdCommand Command;
        public int Status;         // 0 ACK, -10 ERROR
        public uint ErrorCode;     // the server's code, SteerdClient.WireErrorName
        public uint Agent;
        public uint Owner;
        public ulong Tick;
        public ulong ServerTimeUs;
        public ulong RttUs;
        public SteerdModel Model;
        public SteerdBehaviourKind Behaviour;
        public uint Arrived;
        public int PathNode;
        public float X, Y, Orientation, Vx, Vy, Rotation;
        public float MaxSpeed, MaxAcceleration, MaxRotation, MaxAngularAcceleration, Radius;
        public uint Moved;         // AddObstacle: agents moved out of the new obstacle (Agent: its id, Tick: the map's version)
        [MarshalAs(UnmanagedType.ByValArray, SizeConst = 256)] public byte[] MessageBytes;
        [MarshalAs(UnmanagedType.ByValArray, SizeConst = 64)] public byte[] FieldBytes;

        public bool IsError { get { return Status != 0; } }
        public string Message { get { return SteerdText.FromBuffer(MessageBytes); } }
        public string Field { get { return SteerdText.FromBuffer(FieldBytes); } }
        public override string ToString()
        {
            return IsError ? "ERROR " + SteerdClient.WireErrorName(ErrorCode) + ": " + Message + (Field.Length > 0 ? " (" + Field + ")" : "")
                           : "ACK " + Command + " agent " + Agent;
        }
    }

    /// <summary>An obstacle of the map, copied out of the library.</summary>
    public struct SteerdObstacle
    {
        public uint Id;
        public SteerdObstacleKind Kind;
        public float Radius;      // m, circles
        public float[] PointsXY;  // (x, y) pairs, m: a circle's centre, a polygon's or wall's points
    }

    [StructLayout(LayoutKind.Sequential)]
    internal struct NativeObstacle
    {
        public uint Id, Kind, Count;
        public float Radius;
        public IntPtr PointsXY;
    }

    [StructLayout(LayoutKind.Sequential)]
    public struct SteerdLimits
    {
        public SteerdLimitFlags Present;
        public float MaxSpeed, MaxAcceleration, MaxRotation, MaxAngularAcceleration, Radius;
    }

    /// <summary>Behaviour and path parameters; a field is sent when its bit is in Present.</summary>
    [StructLayout(LayoutKind.Sequential)]
    public struct SteerdParams
    {
        public SteerdParamFlags Present;
        public float TimeToTarget, TargetRadius, SlowRadius, KinematicTimeToTarget, AlignTargetRadius,
            AlignSlowRadius, AlignTimeToTarget, MaxPrediction, PanicRadius, WanderOffset, WanderRadius,
            WanderRate, SeparationRadius, TurnTriggerDistance, PathRecoverStrength;
    }

    [StructLayout(LayoutKind.Sequential)]
    public struct SteerdBehaviour
    {
        public SteerdBehaviourKind Kind;
        public SteerdBehaviourFlags Present;
        public float TargetX, TargetY;
        public float Orientation;
        public uint TargetAgent, TargetAgent2;
        public uint Facing, Combine, MaxNeighbours;
        public float SeparationWeight;
        public SteerdParams Params;

        public static SteerdBehaviour Point(SteerdBehaviourKind kind, float x, float y)
        {
            var b = new SteerdBehaviour { Kind = kind, Present = SteerdBehaviourFlags.Target, TargetX = x, TargetY = y };
            return b;
        }

        public static SteerdBehaviour Agent(SteerdBehaviourKind kind, uint agent)
        {
            return new SteerdBehaviour { Kind = kind, Present = SteerdBehaviourFlags.TargetAgent, TargetAgent = agent };
        }
    }

    [StructLayout(LayoutKind.Sequential)]
    public struct SteerdPathOptions
    {
        public float Radius;
        public SteerdPathMode Mode;
        public SteerdCornering Cornering;
        public SteerdParams Params;

        public static SteerdPathOptions Of(SteerdPathMode mode, float radius)
        {
            return new SteerdPathOptions { Radius = radius, Mode = mode };
        }
    }

    [StructLayout(LayoutKind.Sequential)]
    public struct SteerdSpawnDesc
    {
        public SteerdModel Model;
        public SteerdSpawnFlags Present;
        public float X, Y;
        public float Orientation;
        public float Vx, Vy;
        public SteerdLimits Limits;
        public SteerdBehaviour Behaviour;

        public static SteerdSpawnDesc At(SteerdModel model, float x, float y)
        {
            return new SteerdSpawnDesc { Model = model, X = x, Y = y };
        }
    }

    [StructLayout(LayoutKind.Sequential)]
    public struct SteerdView
    {
        public SteerdViewKind Kind;
        public uint Follow;
        public float CentreX, CentreY;
        public float Radius;
    }

    [StructLayout(LayoutKind.Sequential)]
    public struct SteerdWelcome
    {
        public uint ClientId;
        public uint TickRate;
        public uint SnapshotRate;
        public uint Protocol;
        public float WorldMinX, WorldMinY, WorldMaxX, WorldMaxY;
        public ulong Tick;
        public ulong ServerTimeUs;
    }

    [StructLayout(LayoutKind.Sequential)]
    public struct SteerdStats
    {
        public ulong PacketsReceived, BytesReceived, BadPackets, CommandsSent, Acks, Errors, Events;
        public ulong EventsDropped, RepliesDropped, SnapshotParts, SnapshotBytes, FramesComplete, FramesIncomplete;
        public ulong DeltaAcksSent, Pings, RttLastUs, RttMinUs;
        public long ClockOffsetUs;
        public ulong InterpFrames, Underruns, SamplesExtrapolated, SamplesTotal, FramesMissed;
        public float DelayMs, JitterMs;
    }

    /// <summary>A negative return of the library, with its text.</summary>
    public sealed class SteerdException : Exception
    {
        public readonly SteerdError Code;
        public SteerdException(string what, int code)
            : base(what + ": " + SteerdClient.ErrorText(code) + " (" + SteerdClient.ErrorName(code) + ")")
        {
            Code = (SteerdError)code;
        }
    }

    internal static class SteerdText
    {
        // NUL-terminated UTF-8, as the library wants its strings.
        internal static byte[] Utf8z(string s)
        {
            if (s == null)
                return null;
            int n = Encoding.UTF8.GetByteCount(s);
            var b = new byte[n + 1];
            Encoding.UTF8.GetBytes(s, 0, s.Length, b, 0);
            return b;
        }

        internal static string FromBuffer(byte[] b)
        {
            if (b == null)
                return "";
            int n = Array.IndexOf(b, (byte)0);
            return Encoding.UTF8.GetString(b, 0, n < 0 ? b.Length : n);
        }

        internal static string FromStatic(IntPtr p)
        {
            if (p == IntPtr.Zero)
                return "";
            int n = 0;
            while (Marshal.ReadByte(p, n) != 0)
                n++;
            var b = new byte[n];
            Marshal.Copy(p, b, 0, n);
            return Encoding.UTF8.GetString(b);
        }
    }

    internal static class Native
    {
#if UNITY_IOS && !UNITY_EDITOR
        const string Lib = "__Internal"; // statically linked into the player
#else
        const string Lib = "steerd-client"; // libsteerd-client.so / .dylib, steerd-client.dll
#endif
        [DllImport(Lib)] internal static extern uint steerdc_version();
        [DllImport(Lib)] internal static extern IntPtr steerdc_strerror(int code);
        [DllImport(Lib)] internal static extern IntPtr steerdc_error_name(int code);
        [DllImport(Lib)] internal static extern IntPtr steerdc_wire_error_name(uint code);
        [DllImport(Lib)] internal static extern IntPtr steerdc_disconnect_name(uint reason);
        [DllImport(Lib)] internal static extern void steerdc_config_init(out SteerdConfig cfg);
        [DllImport(Lib)] internal static extern IntPtr steerdc_create(ref SteerdConfig cfg);
        [DllImport(Lib)] internal static extern void steerdc_destroy(IntPtr c);
        [DllImport(Lib)] internal static extern int steerdc_connect_start(IntPtr c, byte[] host, ushort port, byte[] name, byte[] token);
        [DllImport(Lib)] internal static extern int steerdc_connect(IntPtr c, byte[] host, ushort port, byte[] name, byte[] token);
        [DllImport(Lib)] internal static extern int steerdc_disconnect(IntPtr c, uint timeoutMs);
        [DllImport(Lib)] internal static extern int steerdc_update(IntPtr c, uint timeoutMs);
        [DllImport(Lib)] internal static extern uint steerdc_get_state(IntPtr c);
        [DllImport(Lib)] internal static extern int steerdc_get_welcome(IntPtr c, out SteerdWelcome w);
        [DllImport(Lib)] internal static extern uint steerdc_disconnect_reason(IntPtr c);
        [DllImport(Lib)] internal static extern int steerdc_last_error(IntPtr c, out SteerdReply r);
        [DllImport(Lib)] internal static extern void steerdc_get_stats(IntPtr c, out SteerdStats s);
        [DllImport(Lib)] internal static extern int steerdc_spawn(IntPtr c, ref SteerdSpawnDesc s, out uint id);
        [DllImport(Lib)] internal static extern int steerdc_spawn_with_path(IntPtr c, ref SteerdSpawnDesc s, float[] xy, uint count, ref SteerdPathOptions o, out uint id);
        [DllImport(Lib)] internal static extern int steerdc_despawn(IntPtr c, uint agent, out uint id);
        [DllImport(Lib)] internal static extern int steerdc_set_behaviour(IntPtr c, uint agent, ref SteerdBehaviour b, out uint id);
        [DllImport(Lib)] internal static extern int steerdc_set_path(IntPtr c, uint agent, float[] xy, uint count, ref SteerdPathOptions o, out uint id);
        [DllImport(Lib)] internal static extern int steerdc_set_params(IntPtr c, uint agent, ref SteerdLimits l, ref SteerdParams p, out uint id);
        [DllImport(Lib)] internal static extern int steerdc_stop(IntPtr c, uint agent, out uint id);
        [DllImport(Lib)] internal static extern int steerdc_query(IntPtr c, uint agent, out uint id);
        [DllImport(Lib)] internal static extern int steerdc_ping(IntPtr c, out uint id);
        [DllImport(Lib)] internal static extern int steerdc_set_view(IntPtr c, ref SteerdView v, out uint id);
        [DllImport(Lib)] internal static extern uint steerdc_map_version(IntPtr c, out int current);
        [DllImport(Lib)] internal static extern uint steerdc_map_count(IntPtr c);
        [DllImport(Lib)] internal static extern int steerdc_map_get(IntPtr c, uint index, out NativeObstacle o);
        [DllImport(Lib)] internal static extern int steerdc_add_obstacle(IntPtr c, uint obstacle, uint kind, float[] xy, uint count, float radius, out uint id);
        [DllImport(Lib)] internal static extern int steerdc_remove_obstacle(IntPtr c, uint obstacle, out uint id);
        // Arrays go in as pinned pointers: Mono marshals a [Out] struct array element by
        // element (~70 us for 1 000 states, measured), a pinned one costs ~0.1 us.
        [DllImport(Lib)] internal static extern int steerdc_poll_states(IntPtr c, ulong nowUs, IntPtr states, uint cap, out SteerdRenderInfo info);
        [DllImport(Lib)] internal static extern int steerdc_get_agent(IntPtr c, uint agent, out SteerdAgentState s);
        [DllImport(Lib)] internal static extern int steerdc_poll_events(IntPtr c, IntPtr events, uint cap);
        [DllImport(Lib)] internal static extern int steerdc_poll_replies(IntPtr c, out SteerdReply reply, uint cap);
        [DllImport(Lib)] internal static extern int steerdc_wait_reply(IntPtr c, uint requestId, uint timeoutMs, out SteerdReply reply);
        [DllImport(Lib)] internal static extern int steerdc_latest_frame(IntPtr c, IntPtr states, uint cap, out ulong tick, out ulong serverTimeUs);
        [DllImport(Lib)] internal static extern ulong steerdc_now_us();
        [DllImport(Lib)] internal static extern ulong steerdc_server_time_us(IntPtr c);
    }

    /// <summary>
    /// One connection to a steerd server. Use it from one thread (Unity's main thread):
    /// call Update() once per frame, then PollStates() for the NPCs to draw, PollEvents()
    /// and PollReply() for what happened. Commands return their request id at once.
    /// </summary>
    public sealed class SteerdClient : IDisposable
    {
        public const int BindingMajorVersion = 1;
        IntPtr handle;

        public SteerdClient() : this(SteerdConfig.Default()) { }

        public SteerdClient(SteerdConfig config)
        {
            uint v = Native.steerdc_version();
            if ((v >> 16) != BindingMajorVersion)
                throw new InvalidOperationException("libsteerd-client " + (v >> 16) + "." + ((v >> 8) & 0xff) +
                                                    " does not match this binding (major " + BindingMajorVersion + ")");
            handle = Native.steerdc_create(ref config);
            if (handle == IntPtr.Zero)
                throw new SteerdException("steerdc_create", (int)SteerdError.InvalidArgument);
        }

        ~SteerdClient() { Free(); }

        public void Dispose()
        {
            Free();
            GC.SuppressFinalize(this);
        }

        void Free()
        {
            if (handle != IntPtr.Zero)
            {
                Native.steerdc_destroy(handle);
                handle = IntPtr.Zero;
            }
        }

        IntPtr H
        {
            get
            {
                if (handle == IntPtr.Zero)
                    throw new ObjectDisposedException("SteerdClient");
                return handle;
            }
        }

        static int Check(string what, int rc)
        {
            if (rc < 0)
                throw new SteerdException(what, rc);
            return rc;
        }

        // ---- text of codes --------------------------------------------------------------

        public static uint LibraryVersion { get { return Native.steerdc_version(); } }
        public static string ErrorText(int code) { return SteerdText.FromStatic(Native.steerdc_strerror(code)); }
        public static string ErrorName(int code) { return SteerdText.FromStatic(Native.steerdc_error_name(code)); }
        public static string WireErrorName(uint code) { return SteerdText.FromStatic(Native.steerdc_wire_error_name(code)); }
        public static string DisconnectName(uint reason) { return SteerdText.FromStatic(Native.steerdc_disconnect_name(reason)); }
        /// <summary>The library's monotonic clock, microseconds.</summary>
        public static ulong NowUs { get { return Native.steerdc_now_us(); } }

        // ---- connection -----------------------------------------------------------------

        /// <summary>Starts connecting; Update() carries it on. Does not block (use it in games).</summary>
        public void ConnectStart(string host, int port, string name, string token = null)
        {
            Check("connect", Native.steerdc_connect_start(H, SteerdText.Utf8z(host), (ushort)port,
                                                         SteerdText.Utf8z(name), SteerdText.Utf8z(token)));
        }

        /// <summary>Connects and waits for the WELCOME (blocks up to the connect timeout).</summary>
        public void Connect(string host, int port, string name, string token = null)
        {
            int rc = Native.steerdc_connect(H, SteerdText.Utf8z(host), (ushort)port, SteerdText.Utf8z(name),
                                            SteerdText.Utf8z(token));
            if (rc == (int)SteerdError.Reply)
            {
                SteerdReply e;
                if (Native.steerdc_last_error(H, out e) == 0)
                    throw new SteerdException("connect: " + e, rc);
            }
            Check("connect", rc);
        }

        public void Disconnect(uint timeoutMs = 1000) { Native.steerdc_disconnect(H, timeoutMs); }

        /// <summary>Network I/O; 0 never blocks. Returns events handled, or a negative SteerdError
        /// once the connection has ended (see State and DisconnectReason).</summary>
        public int Update(uint timeoutMs = 0) { return Native.steerdc_update(H, timeoutMs); }

        public SteerdState State { get { return (SteerdState)Native.steerdc_get_state(H); } }
        public uint DisconnectReason { get { return Native.steerdc_disconnect_reason(H); } }

        public bool TryGetWelcome(out SteerdWelcome w) { return Native.steerdc_get_welcome(H, out w) == 0; }

        public SteerdStats Stats
        {
            get
            {
                SteerdStats s;
                Native.steerdc_get_stats(H, out s);
                return s;
            }
        }

        /// <summary>Estimated server clock now (0 before the first PING answer).</summary>
        public ulong ServerTimeUs { get { return Native.steerdc_server_time_us(H); } }

        // ---- commands: each returns its request id -------------------------------------------

        public uint Spawn(SteerdSpawnDesc desc)
        {
            uint id;
            Check("spawn", Native.steerdc_spawn(H, ref desc, out id));
            return id;
        }

        /// <summary>Spawn on a path: points as x0, y0, x1, y1, ...</summary>
        public uint SpawnWithPath(SteerdSpawnDesc desc, float[] pathXY, SteerdPathOptions options)
        {
            uint id;
            Check("spawn", Native.steerdc_spawn_with_path(H, ref desc, pathXY, PointCount(pathXY), ref options, out id));
            return id;
        }

        public uint Despawn(uint agent)
        {
            uint id;
            Check("despawn", Native.steerdc_despawn(H, agent, out id));
            return id;
        }

        public uint SetBehaviour(uint agent, SteerdBehaviour behaviour)
        {
            uint id;
            Check("set_behaviour", Native.steerdc_set_behaviour(H, agent, ref behaviour, out id));
            return id;
        }

        /// <summary>Seek (or arrive at, flee from...) a point.</summary>
        public uint SetTarget(uint agent, SteerdBehaviourKind kind, float x, float y)
        {
            return SetBehaviour(agent, SteerdBehaviour.Point(kind, x, y));
        }

        public uint SetPath(uint agent, float[] pathXY, SteerdPathOptions options)
        {
            uint id;
            Check("set_path", Native.steerdc_set_path(H, agent, pathXY, PointCount(pathXY), ref options, out id));
            return id;
        }

        public uint SetParams(uint agent, SteerdLimits limits, SteerdParams parameters)
        {
            uint id;
            Check("set_params", Native.steerdc_set_params(H, agent, ref limits, ref parameters, out id));
            return id;
        }

        public uint Stop(uint agent)
        {
            uint id;
            Check("stop", Native.steerdc_stop(H, agent, out id));
            return id;
        }

        public uint Query(uint agent)
        {
            uint id;
            Check("query", Native.steerdc_query(H, agent, out id));
            return id;
        }

        public uint Ping()
        {
            uint id;
            Check("ping", Native.steerdc_ping(H, out id));
            return id;
        }

        // ---- the map (PROTOCOL.md 17): the client's copy of the server's level -------------

        /// <summary>The copy's version; current is true when it is complete and up to date.</summary>
        public uint MapVersion(out bool current)
        {
            int c;
            uint v = Native.steerdc_map_version(H, out c);
            current = c != 0;
            return v;
        }

        public uint MapObstacleCount { get { return Native.steerdc_map_count(H); } }

        /// <summary>The index-th obstacle in the server's order (points copied: (x, y) pairs, m).</summary>
        public SteerdObstacle GetObstacle(uint index)
        {
            NativeObstacle o;
            Check("map_get", Native.steerdc_map_get(H, index, out o));
            var points = new float[2 * o.Count];
            Marshal.Copy(o.PointsXY, points, 0, points.Length);
            return new SteerdObstacle { Id = o.Id, Kind = (SteerdObstacleKind)o.Kind, Radius = o.Radius, PointsXY = points };
        }

        /// <summary>Admins: add an obstacle (a circle: one (x, y) pair and a radius; a polygon or wall: its points).</summary>
        public uint AddObstacle(uint obstacle, SteerdObstacleKind kind, float[] pointsXY, float radius = 0f)
        {
            uint id;
            Check("add_obstacle", Native.steerdc_add_obstacle(H, obstacle, (uint)kind, pointsXY, PointCount(pointsXY), radius, out id));
            return id;
        }

        public uint RemoveObstacle(uint obstacle)
        {
            uint id;
            Check("remove_obstacle", Native.steerdc_remove_obstacle(H, obstacle, out id));
            return id;
        }

        public uint SetView(SteerdView view)
        {
            uint id;
            Check("set_view", Native.steerdc_set_view(H, ref view, out id));
            return id;
        }

        static uint PointCount(float[] xy)
        {
            if (xy == null || xy.Length < 2 || (xy.Length & 1) != 0)
                throw new ArgumentException("path points: x, y pairs");
            return (uint)(xy.Length / 2);
        }

        // ---- polling ------------------------------------------------------------------------

        /// <summary>Agents interpolated at the render time into states (reused by the caller every
        /// frame). Returns how many were written; 0 before the first snapshot. nowUs 0: the
        /// library's clock.</summary>
        public int PollStates(SteerdAgentState[] states, out SteerdRenderInfo info, ulong nowUs = 0)
        {
            IntPtr h = H;
            GCHandle pin = GCHandle.Alloc(states, GCHandleType.Pinned);
            int n;
            try { n = Native.steerdc_poll_states(h, nowUs, pin.AddrOfPinnedObject(), (uint)states.Length, out info); }
            finally { pin.Free(); }
            if (n == (int)SteerdError.NoData)
                return 0;
            return Check("poll_states", n);
        }

        /// <summary>One agent at the render time of the last PollStates.</summary>
        public bool TryGetAgent(uint agent, out SteerdAgentState state)
        {
            return Native.steerdc_get_agent(H, agent, out state) == 0;
        }

        public int PollEvents(SteerdEvent[] events)
        {
            IntPtr h = H;
            GCHandle pin = GCHandle.Alloc(events, GCHandleType.Pinned);
            try { return Check("poll_events", Native.steerdc_poll_events(h, pin.AddrOfPinnedObject(), (uint)events.Length)); }
            finally { pin.Free(); }
        }

        /// <summary>The oldest queued reply, if any.</summary>
        public bool PollReply(out SteerdReply reply)
        {
            return Check("poll_replies", Native.steerdc_poll_replies(H, out reply, 1)) == 1;
        }

        /// <summary>Blocks (updating) until the reply to requestId arrives. Throws on a timeout or
        /// a lost connection; an ERROR reply is returned (IsError), not thrown.</summary>
        public SteerdReply WaitReply(uint requestId, uint timeoutMs = 5000)
        {
            SteerdReply r;
            int rc = Native.steerdc_wait_reply(H, requestId, timeoutMs, out r);
            if (rc < 0 && rc != (int)SteerdError.Reply)
                throw new SteerdException("wait_reply", rc);
            return r;
        }

        /// <summary>The newest complete snapshot as received (not interpolated).</summary>
        public int LatestFrame(SteerdAgentState[] states, out ulong tick, out ulong serverTimeUs)
        {
            IntPtr h = H;
            GCHandle pin = GCHandle.Alloc(states, GCHandleType.Pinned);
            int n;
            try { n = Native.steerdc_latest_frame(h, pin.AddrOfPinnedObject(), (uint)states.Length, out tick, out serverTimeUs); }
            finally { pin.Free(); }
            return n == (int)SteerdError.NoData ? 0 : Check("latest_frame", n);
        }
    }
}
