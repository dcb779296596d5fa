// SteerdWorldView.cs: a Unity sample. Connects to a steerd server, keeps one GameObject
// per NPC in sync with the interpolated states, and lets you command agents.
//
// NOT RUN INSIDE UNITY HERE: this repository's tests compile it against stub UnityEngine
// types (tests/csharp/UnityEngineStubs.cs) to catch API misuse, nothing more. See
// bindings/csharp/README.md.
//
// Add it to an empty GameObject; set host, port and (for a server with a secret) the
// token from `steerd token`. Every frame it calls SteerdClient.Update(0) (never blocks),
// PollStates into a reused array, and moves each NPC's transform; NPCs that leave the
// snapshots (despawned, out of view) are destroyed.
using System.Collections.Generic;
using Steerd;
using UnityEngine;

/// <summary>Server (x, y, theta) to Unity's x-z plane and back (PROTOCOL.md 3).</summary>
public static class SteerdAxes
{
    /// <summary>Server metres to a Unity position on the ground plane (y up).</summary>
    public static Vector3 ToUnity(float x, float y, float height = 0f) { return new Vector3(x, height, y); }

    /// <summary>Server heading (rad, counter-clockwise from +x) to a Unity rotation
    /// (yaw clockwise from +z seen from above): yaw = 90 - theta in degrees.</summary>
    public static Quaternion ToUnityRotation(float theta) { return Quaternion.Euler(0f, 90f - theta * Mathf.Rad2Deg, 0f); }

    /// <summary>A Unity point on the ground to server metres.</summary>
    public static Vector2 FromUnity(Vector3 p) { return new Vector2(p.x, p.z); }
}

public class SteerdWorldView : MonoBehaviour
{
    [Header("Server")]
    public string host = "127.0.0.1";
    public int port = 7777;
    public string clientName = "unity";
    [Tooltip("From `steerd token`; empty for a loopback server without a secret")]
    public string token = "";
    [Tooltip("Delta snapshots: less bandwidth; the library rebuilds and acknowledges them")]
    public bool deltaSnapshots = true;
    public int maxAgents = 4096;

    [Header("NPCs")]
    [Tooltip("Instantiated per agent; a capsule when empty")]
    public GameObject npcPrefab;
    public float npcHeight = 1f;

    SteerdClient client;
    SteerdAgentState[] states;
    readonly SteerdEvent[] events = new SteerdEvent[256];
    readonly Dictionary<uint, Transform> npcs = new Dictionary<uint, Transform>();
    readonly HashSet<uint> seen = new HashSet<uint>();
    readonly List<uint> gone = new List<uint>();

    public SteerdClient Client { get { return client; } }
    public bool Connected { get { return client != null && client.State == SteerdState.Connected; } }

    void Start()
    {
        SteerdConfig cfg = SteerdConfig.Default();
        cfg.MaxAgents = (uint)maxAgents;
        cfg.Snapshots = deltaSnapshots ? SteerdSnapshots.Delta : SteerdSnapshots.Full;
        client = new SteerdClient(cfg);
        states = new SteerdAgentState[maxAgents];
        client.ConnectStart(host, port, clientName, token.Length > 0 ? token : null);
    }

    void Update()
    {
        if (client == null)
            return;
        int rc = client.Update(0);
        if (rc < 0)
        {
            Debug.LogWarning("steerd: connection ended: " + SteerdClient.ErrorText(rc) + ", reason " +
                             SteerdClient.DisconnectName(client.DisconnectReason));
            enabled = false;
            return;
        }
        if (client.State != SteerdState.Connected)
            return;

        SteerdRenderInfo info;
        int n = client.PollStates(states, out info);
        seen.Clear();
        for (int i = 0; i < n; i++)
        {
            SteerdAgentState s = states[i];
            Transform t;
            if (!npcs.TryGetValue(s.Id, out t))
            {
                GameObject go = npcPrefab != null ? Instantiate(npcPrefab) : GameObject.CreatePrimitive(PrimitiveType.Capsule);
                go.name = "npc " + s.Id;
                t = go.transform;
                t.SetParent(transform, false);
                npcs.Add(s.Id, t);
            }
            t.SetPositionAndRotation(SteerdAxes.ToUnity(s.X, s.Y, npcHeight), SteerdAxes.ToUnityRotation(s.Theta));
            seen.Add(s.Id);
        }
        gone.Clear();
        foreach (KeyValuePair<uint, Transform> kv in npcs)
            if (!seen.Contains(kv.Key))
                gone.Add(kv.Key);
        foreach (uint id in gone)
        {
            Destroy(npcs[id].gameObject);
            npcs.Remove(id);
        }

        int e = client.PollEvents(events);
        for (int i = 0; i < e; i++)
            if (events[i].Code == SteerdEventCode.Arrived)
                Debug.Log("steerd: agent " + events[i].Agent + " arrived");
        SteerdReply reply;
        while (client.PollReply(out reply))
            if (reply.IsError)
                Debug.LogWarning("steerd: " + reply);
    }

    /// <summary>Spawns a dynamic NPC at a point on the ground; returns the request id (the
    /// agent id comes in the reply).</summary>
    public uint SpawnAt(Vector3 ground, float maxSpeed)
    {
        Vector2 p = SteerdAxes.FromUnity(ground);
        SteerdSpawnDesc d = SteerdSpawnDesc.At(SteerdModel.Dynamic, p.x, p.y);
        d.Present = SteerdSpawnFlags.Limits;
        d.Limits = new SteerdLimits { Present = SteerdLimitFlags.MaxSpeed, MaxSpeed = maxSpeed };
        return client.Spawn(d);
    }

    /// <summary>Sends an agent to arrive at a point on the ground.</summary>
    public uint SendTo(uint agent, Vector3 ground)
    {
        Vector2 p = SteerdAxes.FromUnity(ground);
        return client.SetTarget(agent, SteerdBehaviourKind.Arrive, p.x, p.y);
    }

    /// <summary>Sends an agent along points on the ground.</summary>
    public uint Patrol(uint agent, Vector3[] points)
    {
        float[] xy = new float[points.Length * 2];
        for (int i = 0; i < points.Length; i++)
        {
            Vector2 p = SteerdAxes.FromUnity(points[i]);
            xy[2 * i] = p.x;
            xy[2 * i + 1] = p.y;
        }
        return client.SetPath(agent, xy, SteerdPathOptions.Of(SteerdPathMode.PingPong, 1f));
    }

    void OnDestroy()
    {
        if (client != null)
        {
            client.Disconnect(200);
            client.Dispose();
            client = null;
        }
    }
}
