// The Restate side of the HITL peer (bench/peers/restate_hitl.py): a workflow whose run
// waits on a durable promise, and a shared handler that resolves it with the decision.
// Run with NODE_PATH pointing at the node_modules of bench/peers/install.sh.
// The SDK calls Promise.withResolvers (Node 22); this machine's Node is 20: the standard
// definition, for older runtimes.
if (typeof Promise.withResolvers !== "function") {
  Promise.withResolvers = function withResolvers() {
    let resolve;
    let reject;
    const promise = new Promise((yes, no) => {
      resolve = yes;
      reject = no;
    });
    return { promise, resolve, reject };
  };
}
const restate = require("@restatedev/restate-sdk");

const mailApproval = restate.workflow({
  name: "mailApproval",
  handlers: {
    run: async (ctx, topic) => {
      const decision = await ctx.promise("approval");
      return { topic, status: decision === "approve" ? "COMPLETED" : "FAILED" };
    },
    approve: async (ctx, decision) => {
      await ctx.promise("approval").resolve(decision);
    },
  },
});

const port = Number(process.argv[2] || 9080);
restate.serve({ services: [mailApproval], port }).then((bound) => {
  console.log(`restate service listening on ${bound}`);
});
