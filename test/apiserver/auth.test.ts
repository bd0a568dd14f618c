import { describe, expect, it } from "vitest";
import { parseTokenFile, TokenFileError } from "../../src/apiserver/server/index.ts";

describe("parseTokenFile (Kubernetes' --token-auth-file format)", () => {
  it("reads token,user,uid and quoted groups, skipping blanks and comments", () => {
    const text = [
      "# who may call",
      "",
      't1,alice,u-1,"platform, ops"',
      "t2 , bob , ,deployers",
      't3,"carol ""c"" smith",u-3',
    ].join("\r\n");
    expect(parseTokenFile(text)).toEqual([
      ["t1", { name: "alice", uid: "u-1", groups: ["platform", "ops"] }],
      ["t2", { name: "bob", groups: ["deployers"] }],
      ["t3", { name: 'carol "c" smith', uid: "u-3", groups: [] }],
    ]);
  });

  it("names the file and line of the first problem", () => {
    const bad: [string, RegExp][] = [
      ["t1,alice,u\nt2,bob", /^tokens\.csv, line 2: want token,user,uid/],
      [",alice,u", /line 1: empty token/],
      ["t1,,u", /line 1: empty user name/],
      ["t1,a,u\nt1,b,u", /line 2: a token given twice/],
      ['t1,"alice,u', /line 1: unbalanced double quotes/],
      ['t1,"ali"ce,u', /line 1: unbalanced double quotes/],
    ];
    for (const [text, message] of bad) {
      expect(() => parseTokenFile(text, "tokens.csv"), text).toThrow(TokenFileError);
      expect(() => parseTokenFile(text, "tokens.csv"), text).toThrow(message);
    }
  });
});
