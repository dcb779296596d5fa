// UnityEngineStubs.cs: just enough of UnityEngine's API surface (names and signatures as
// Unity documents them) to compile bindings/csharp/Unity/SteerdWorldView.cs here, so a
// misused binding API breaks the build. Nothing in it behaves like Unity; nothing is run.
using System;

namespace UnityEngine
{
    public struct Vector2
    {
        public float x, y;
        public Vector2(float x, float y) { this.x = x; this.y = y; }
    }

    public struct Vector3
    {
        public float x, y, z;
        public Vector3(float x, float y, float z) { this.x = x; this.y = y; this.z = z; }
    }

    public struct Quaternion
    {
        public float x, y, z, w;
        public static Quaternion Euler(float x, float y, float z) { throw new NotImplementedException("stub"); }
    }

    public static class Mathf
    {
        public const float Rad2Deg = 57.29578f;
        public const float Deg2Rad = 0.01745329f;
    }

    public enum PrimitiveType { Sphere, Capsule, Cylinder, Cube, Plane, Quad }

    public class Object
    {
        public string name { get; set; }
        public static void Destroy(Object obj) { throw new NotImplementedException("stub"); }
        public static T Instantiate<T>(T original) where T : Object { throw new NotImplementedException("stub"); }
    }

    public class Component : Object
    {
        public Transform transform { get { throw new NotImplementedException("stub"); } }
        public GameObject gameObject { get { throw new NotImplementedException("stub"); } }
    }

    public class Transform : Component
    {
        public Vector3 position { get; set; }
        public Quaternion rotation { get; set; }
        public void SetParent(Transform parent, bool worldPositionStays) { throw new NotImplementedException("stub"); }
        public void SetPositionAndRotation(Vector3 position, Quaternion rotation) { throw new NotImplementedException("stub"); }
    }

    public class Behaviour : Component
    {
        public bool enabled { get; set; }
    }

    public class MonoBehaviour : Behaviour { }

    public sealed class GameObject : Object
    {
        public Transform transform { get { throw new NotImplementedException("stub"); } }
        public static GameObject CreatePrimitive(PrimitiveType type) { throw new NotImplementedException("stub"); }
    }

    public static class Debug
    {
        public static void Log(object message) { }
        public static void LogWarning(object message) { }
    }

    [AttributeUsage(AttributeTargets.Field)]
    public sealed class HeaderAttribute : Attribute
    {
        public HeaderAttribute(string header) { }
    }

    [AttributeUsage(AttributeTargets.Field)]
    public sealed class TooltipAttribute : Attribute
    {
        public TooltipAttribute(string tooltip) { }
    }
}
