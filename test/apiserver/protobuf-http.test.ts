/**
 * Answers in Kubernetes protobuf over real HTTP, as client-go's typed clients ask
 * for them (`Accept: application/vnd.kubernetes.protobuf,application/json`):
 * objects, lists, errors as a protobuf Status, watch streams of length-prefixed
 * WatchEvent frames; JSON where protobuf has no encoding (custom resources,
 * Tables), 406 when only protobuf is acceptable there.
 */
import type { KubeObject } from "@setpoint/api";
import type protobuf from "protobufjs";
import { describe, expect, it } from "vitest";
import {
  decodeProtobufObject,
  encodeProtobufObject,
  PROTOBUF_MAGIC,
  PROTOBUF_WATCH_CONTENT_TYPE,
} from "../../src/apiserver/wire/index.ts";
import { protobufRoot } from "../../src/apiserver/wire/protobuf/messages.ts";
import { startForFile, startTestServer } from "../helpers/test-server.ts";

const srv = startForFile(() => startTestServer({ controllers: {} }));

const PB = "application/vnd.kubernetes.protobuf";
const CLIENT_GO_ACCEPT = `${PB},application/json`;

function request(path: string, accept: string, init: RequestInit = {}): Promise<Response> {
  return fetch(`${srv.url}${path}`, {
    ...init,
    headers: {
      accept,
      authorization: `Bearer ${srv.token}`,
      ...(init.headers as Record<string, string> | undefined),
    },
  });
}

async function json(path: string): Promise<Record<string, unknown>> {
  return (await (await request(path, "application/json")).json()) as Record<string, unknown>;
}

const root = protobufRoot();

/** The message inside a protobuf answer: its envelope's kind and the decoded raw bytes. */
function envelope(bytes: Buffer): { kind: string; apiVersion: string; raw: Uint8Array } {
  expect(bytes.subarray(0, 4)).toEqual(PROTOBUF_MAGIC);
  const type = root.lookupType("k8s.io.apimachinery.pkg.runtime.Unknown");
  const u = type.decode(bytes.subarray(4)) as unknown as {
    typeMeta: { apiVersion: string; kind: string };
    raw: Uint8Array;
  };
  return { ...u.typeMeta, raw: u.raw };
}

function decodeAs(name: string, raw: Uint8Array): Record<string, unknown> {
  const type: protobuf.Type = root.lookupType(name);
  return type.toObject(type.decode(raw), { longs: Number }) as Record<string, unknown>;
}

const DEPLOYMENT = {
  apiVersion: "apps/v1",
  kind: "Deployment",
  metadata: { name: "web", namespace: "default", labels: { app: "web" } },
  spec: {
    replicas: 2,
    selector: { matchLabels: { app: "web" } },
    template: {
      metadata: { labels: { app: "web" } },
      spec: { containers: [{ name: "c", image: "nginx:1.27", ports: [{ containerPort: 80 }] }] },
    },
  },
};

describe("protobuf answers", () => {
  it("answers a create, a get and a list in protobuf, as JSON answers them", async () => {
    const created = await request(
      "/apis/apps/v1/namespaces/default/deployments",
      CLIENT_GO_ACCEPT,
      {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify(DEPLOYMENT),
      },
    );
    expect(created.status).toBe(201);
    expect(created.headers.get("content-type")).toBe(PB);
    const fromCreate = decodeProtobufObject(Buffer.from(await created.arrayBuffer()));
    expect(fromCreate.metadata.uid).toBeTruthy();

    // A PodTemplate: nothing else writes it between the two reads.
    const tpl = {
      apiVersion: "v1",
      kind: "PodTemplate",
      metadata: { name: "tpl", namespace: "default" },
      template: DEPLOYMENT.spec.template,
    };
    await srv.client.create(tpl);
    const got = await request("/api/v1/namespaces/default/podtemplates/tpl", CLIENT_GO_ACCEPT);
    expect(got.headers.get("content-type")).toBe(PB);
    const fromGet = decodeProtobufObject(Buffer.from(await got.arrayBuffer()));
    const asJson = await json("/api/v1/namespaces/default/podtemplates/tpl");
    // What JSON answers, sent as protobuf (empty structs that are not pointers, such
    // as a container's `resources: {}`, decode as absent: the same Go struct).
    expect(fromGet).toEqual(decodeProtobufObject(encodeProtobufObject(asJson)!));
    expect(fromGet.metadata).toEqual(asJson.metadata);
    expect((fromGet as typeof tpl).template.spec.containers).toEqual([
      {
        name: "c",
        image: "nginx:1.27",
        ports: [{ containerPort: 80, protocol: "TCP" }],
        imagePullPolicy: "IfNotPresent",
        terminationMessagePath: "/dev/termination-log",
        terminationMessagePolicy: "File",
      },
    ]);

    // The controllers keep writing (the Deployment's status, its Pods, Events), so
    // both lists are read at one revision.
    const jsonList = (await json("/apis/apps/v1/namespaces/default/deployments")) as {
      metadata: { resourceVersion: string };
    };
    const at = `resourceVersion=${jsonList.metadata.resourceVersion}&resourceVersionMatch=Exact`;
    const list = await request(
      `/apis/apps/v1/namespaces/default/deployments?${at}`,
      CLIENT_GO_ACCEPT,
    );
    expect(list.headers.get("content-type")).toBe(PB);
    const env = envelope(Buffer.from(await list.arrayBuffer()));
    expect(env).toMatchObject({ apiVersion: "apps/v1", kind: "DeploymentList" });
    const decoded = decodeAs("k8s.io.api.apps.v1.DeploymentList", env.raw) as {
      metadata: { resourceVersion: string };
      items: { metadata: { name: string; uid: string }; spec: { replicas: number } }[];
    };
    expect(decoded.metadata.resourceVersion).toBe(jsonList.metadata.resourceVersion);
    expect(decoded.items.map((i) => [i.metadata.name, i.metadata.uid, i.spec.replicas])).toEqual([
      ["web", fromCreate.metadata.uid, 2],
    ]);
  });

  it("answers errors with a protobuf Status", async () => {
    const res = await request("/api/v1/namespaces/default/pods/none", CLIENT_GO_ACCEPT);
    expect(res.status).toBe(404);
    expect(res.headers.get("content-type")).toBe(PB);
    const env = envelope(Buffer.from(await res.arrayBuffer()));
    expect(env).toMatchObject({ apiVersion: "v1", kind: "Status" });
    expect(decodeAs("k8s.io.apimachinery.pkg.apis.meta.v1.Status", env.raw)).toMatchObject({
      status: "Failure",
      reason: "NotFound",
      message: 'pods "none" not found',
      details: { name: "none", kind: "pods" },
      code: 404,
    });
  });

  it("answers JSON where protobuf has no encoding, and 406 when only protobuf would do", async () => {
    const table = await request(
      "/api/v1/namespaces",
      `${PB};as=Table;v=v1;g=meta.k8s.io,application/json;as=Table;v=v1;g=meta.k8s.io`,
    );
    expect(table.headers.get("content-type")).toBe("application/json;as=Table;g=meta.k8s.io;v=v1");
    const crds = await request("/apis/apiextensions.k8s.io/v1/customresourcedefinitions", PB);
    expect(crds.status).toBe(406);
    expect(((await crds.json()) as { message: string }).message).toBe(
      "only the following media types are accepted: application/json, application/yaml",
    );
    const pods = await request("/api/v1/pods", "text/plain");
    expect(((await pods.json()) as { message: string }).message).toBe(
      "only the following media types are accepted: application/json, application/yaml, application/vnd.kubernetes.protobuf",
    );
  });

  it("streams a watch as length-prefixed WatchEvent frames", async () => {
    const controller = new AbortController();
    const res = await request("/api/v1/namespaces/default/configmaps?watch=1", CLIENT_GO_ACCEPT, {
      signal: controller.signal,
    });
    try {
      expect(res.headers.get("content-type")).toBe(PROTOBUF_WATCH_CONTENT_TYPE);
      const reader = res.body!.getReader();
      let buffered = Buffer.alloc(0);
      const nextEvent = async (): Promise<{ type: string; object: KubeObject }> => {
        for (;;) {
          if (buffered.length >= 4 && buffered.length >= 4 + buffered.readUInt32BE(0)) {
            const size = buffered.readUInt32BE(0);
            const frame = buffered.subarray(4, 4 + size);
            buffered = buffered.subarray(4 + size);
            const event = decodeAs("k8s.io.apimachinery.pkg.apis.meta.v1.WatchEvent", frame) as {
              type: string;
              object: { raw: Uint8Array };
            };
            return {
              type: event.type,
              object: decodeProtobufObject(Buffer.from(event.object.raw)),
            };
          }
          const { value, done } = await reader.read();
          if (done) throw new Error("watch ended");
          buffered = Buffer.concat([buffered, Buffer.from(value)]);
        }
      };
      await srv.client.create({
        apiVersion: "v1",
        kind: "ConfigMap",
        metadata: { name: "watched", namespace: "default" },
        data: { a: "1" },
      });
      let event = await nextEvent();
      // The namespace's own objects come first (the root CA ConfigMap), then ours.
      while (event.object.metadata.name !== "watched") event = await nextEvent();
      expect(event.type).toBe("ADDED");
      expect(event.object).toMatchObject({ kind: "ConfigMap", data: { a: "1" } });
      await srv.client.delete({ apiVersion: "v1", kind: "ConfigMap" }, "watched", "default");
      event = await nextEvent();
      expect(event.type).toBe("DELETED");
      expect(event.object.metadata.name).toBe("watched");
    } finally {
      controller.abort();
    }
  });
});
