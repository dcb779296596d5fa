// msgpack.js: the msgpack the steerd protocol uses (PROTOCOL.md 2), both ways,
// for the live view. Served by the server itself; no dependencies.
"use strict";

const MsgPack = (() => {
  const utf8in = new TextDecoder("utf-8", { fatal: false });
  const utf8out = new TextEncoder();

  // One value from bytes (a Uint8Array); throws on truncated or unknown bytes.
  function decode(bytes) {
    const dv = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
    let pos = 0;
    const need = (n) => {
      if (pos + n > bytes.length) throw new Error("msgpack: truncated");
    };
    const u8 = () => (need(1), dv.getUint8(pos++));
    const u16 = () => (need(2), (pos += 2), dv.getUint16(pos - 2));
    const u32 = () => (need(4), (pos += 4), dv.getUint32(pos - 4));
    const str = (n) => (need(n), (pos += n), utf8in.decode(bytes.subarray(pos - n, pos)));
    const bin = (n) => (need(n), (pos += n), bytes.slice(pos - n, pos));
    const arr = (n) => {
      const a = new Array(n);
      for (let i = 0; i < n; i++) a[i] = value();
      return a;
    };
    const map = (n) => {
      const m = {};
      for (let i = 0; i < n; i++) {
        const k = value();
        m[k] = value();
      }
      return m;
    };
    function value() {
      const b = u8();
      if (b <= 0x7f) return b;
      if (b >= 0xe0) return b - 0x100;
      if ((b & 0xf0) === 0x80) return map(b & 0x0f);
      if ((b & 0xf0) === 0x90) return arr(b & 0x0f);
      if ((b & 0xe0) === 0xa0) return str(b & 0x1f);
      switch (b) {
        case 0xc0: return null;
        case 0xc2: return false;
        case 0xc3: return true;
        case 0xc4: return bin(u8());
        case 0xc5: return bin(u16());
        case 0xc6: return bin(u32());
        case 0xca: need(4); pos += 4; return dv.getFloat32(pos - 4);
        case 0xcb: need(8); pos += 8; return dv.getFloat64(pos - 8);
        case 0xcc: return u8();
        case 0xcd: return u16();
        case 0xce: return u32();
        case 0xcf: need(8); pos += 8; return Number(dv.getBigUint64(pos - 8));
        case 0xd0: need(1); pos += 1; return dv.getInt8(pos - 1);
        case 0xd1: need(2); pos += 2; return dv.getInt16(pos - 2);
        case 0xd2: need(4); pos += 4; return dv.getInt32(pos - 4);
        case 0xd3: need(8); pos += 8; return Number(dv.getBigInt64(pos - 8));
        case 0xd9: return str(u8());
        case 0xda: return str(u16());
        case 0xdb: return str(u32());
        case 0xdc: return arr(u16());
        case 0xdd: return arr(u32());
        case 0xde: return map(u16());
        case 0xdf: return map(u32());
        default: throw new Error("msgpack: unsupported byte 0x" + b.toString(16));
      }
    }
    const v = value();
    if (pos !== bytes.length) throw new Error("msgpack: trailing bytes");
    return v;
  }

  // Arrays, string-keyed objects, strings, booleans, null, integers and
  // (as float64) other numbers, into a Uint8Array.
  function encode(v) {
    const out = [];
    const push8 = (b) => out.push(b & 0xff);
    const push16 = (n) => out.push((n >> 8) & 0xff, n & 0xff);
    const push32 = (n) => out.push((n >>> 24) & 0xff, (n >>> 16) & 0xff, (n >>> 8) & 0xff, n & 0xff);
    function value(x) {
      if (x === null || x === undefined) return push8(0xc0);
      if (x === false) return push8(0xc2);
      if (x === true) return push8(0xc3);
      if (typeof x === "number") {
        if (Number.isInteger(x) && x >= 0 && x <= 0xffffffff) {
          if (x <= 0x7f) return push8(x);
          if (x <= 0xff) return push8(0xcc), push8(x);
          if (x <= 0xffff) return push8(0xcd), push16(x);
          return push8(0xce), push32(x);
        }
        if (Number.isInteger(x) && x >= 0 && x <= Number.MAX_SAFE_INTEGER) {
          push8(0xcf);
          const b = new DataView(new ArrayBuffer(8));
          b.setBigUint64(0, BigInt(x));
          for (let i = 0; i < 8; i++) out.push(b.getUint8(i));
          return;
        }
        push8(0xcb);
        const b = new DataView(new ArrayBuffer(8));
        b.setFloat64(0, x);
        for (let i = 0; i < 8; i++) out.push(b.getUint8(i));
        return;
      }
      if (typeof x === "string") {
        const s = utf8out.encode(x);
        if (s.length <= 31) push8(0xa0 | s.length);
        else if (s.length <= 0xff) push8(0xd9), push8(s.length);
        else push8(0xda), push16(s.length);
        for (const c of s) out.push(c);
        return;
      }
      if (Array.isArray(x)) {
        if (x.length <= 15) push8(0x90 | x.length);
        else push8(0xdc), push16(x.length);
        x.forEach(value);
        return;
      }
      const keys = Object.keys(x);
      if (keys.length <= 15) push8(0x80 | keys.length);
      else push8(0xde), push16(keys.length);
      for (const k of keys) {
        value(k);
        value(x[k]);
      }
    }
    value(v);
    return new Uint8Array(out);
  }

  return { decode, encode };
})();
