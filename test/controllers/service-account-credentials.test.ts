/**
 * The controllers' ServiceAccount credentials against a real https apiserver: the
 * account is made in kube-system when missing, its token is kept until
 * TOKEN_RENEW_FRACTION of its hour has passed (on a clock the test moves) and
 * minted again after, and a client acting as the account authenticates as it and
 * gets a new token after a 401 (the account deleted and made again).
 */
import { Client } from "@setpoint/runtime";
import { afterAll, describe, expect, it } from "vitest";
import {
  CONTROLLER_TOKEN_SECONDS,
  ServiceAccountCredentials,
} from "../../src/controllers/index.ts";
import { eventually } from "../helpers/poll.ts";
import { startForFile, startTestServer } from "../helpers/test-server.ts";

const srv = startForFile(() => startTestServer({ tls: true }));
const SA = { apiVersion: "v1", kind: "ServiceAccount" } as const;
const WHOAMI = {
  apiVersion: "authentication.k8s.io/v1",
  kind: "SelfSubjectReview",
  metadata: {},
} as const;

describe("ServiceAccountCredentials", () => {
  let clock = Date.now();
  let admin: Client | undefined;
  let creds: ServiceAccountCredentials | undefined;
  afterAll(() => {
    creds?.close();
    admin?.close();
  });

  it("makes the account, keeps its token until it is due, and renews it after a 401", async () => {
    admin = new Client(srv.config);
    creds = new ServiceAccountCredentials(admin, { now: () => clock });
    const first = await creds.token("test-controller");
    expect((await admin.get(SA, "test-controller", "kube-system")).metadata.name).toBe(
      "test-controller",
    );
    expect(await creds.token("test-controller")).toBe(first);
    // Due after 80% of the hour: a new one.
    clock += 0.79 * CONTROLLER_TOKEN_SECONDS * 1000;
    expect(await creds.token("test-controller")).toBe(first);
    clock += 0.02 * CONTROLLER_TOKEN_SECONDS * 1000;
    const second = await creds.token("test-controller");
    expect(second).not.toBe(first);

    const client = creds.clientFor("test-controller");
    const who = async () =>
      (
        (await client.create(WHOAMI as never)) as unknown as {
          status: { userInfo: { username: string } };
        }
      ).status.userInfo.username;
    expect(await eventually(who, "the account's token accepted")).toBe(
      "system:serviceaccount:kube-system:test-controller",
    );
    // Deleted and made again: the held token is refused, and a new one is minted.
    await admin.delete(SA, "test-controller", "kube-system");
    await eventually(
      async () =>
        (await admin!.list(SA, { namespace: "kube-system" })).items.every(
          (s) => s.metadata.name !== "test-controller",
        ),
      "the account gone",
    );
    expect(await eventually(who, "a new token after the 401")).toBe(
      "system:serviceaccount:kube-system:test-controller",
    );
    expect(await creds.token("test-controller")).not.toBe(second);
  });
});
