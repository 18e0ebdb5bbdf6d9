// The sqs-core and sqs-fifo scenarios through aws-sdk-js v3 (@aws-sdk/client-sqs): every step of
// compat/clients/README.md, in order, with the same names, bodies and attribute values as the
// boto3 reference program. OKURI_SCENARIO names the scenario (sqs-core when unset).
//
// Configured only by the environment, as a user's program would be: AWS_ENDPOINT_URL (read by
// the SDK itself), AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY, AWS_REGION, and
// OKURI_SCENARIO_PREFIX for queue names. One attempt per request and no polling loops, so a
// recording holds exactly the step list. Exits 0 only if every check passed; the last stdout
// line is then `SCENARIO {json}` naming the client and the installed SDK's version.

import { createHash } from "node:crypto";
import { readFileSync } from "node:fs";
import {
  SQSClient,
  ChangeMessageVisibilityBatchCommand,
  ChangeMessageVisibilityCommand,
  CancelMessageMoveTaskCommand,
  CreateQueueCommand,
  DeleteMessageBatchCommand,
  DeleteMessageCommand,
  DeleteQueueCommand,
  GetQueueAttributesCommand,
  GetQueueUrlCommand,
  ListDeadLetterSourceQueuesCommand,
  ListMessageMoveTasksCommand,
  ListQueueTagsCommand,
  ListQueuesCommand,
  PurgeQueueCommand,
  ReceiveMessageCommand,
  SendMessageBatchCommand,
  SendMessageCommand,
  SetQueueAttributesCommand,
  StartMessageMoveTaskCommand,
  TagQueueCommand,
  UntagQueueCommand,
} from "@aws-sdk/client-sqs";

const CLIENT = "aws-sdk-js-v3";
// OKURI_SCENARIO picks the step list; unset, the program runs sqs-core.
const DEFAULT_SCENARIO = "sqs-core";
const SDK_VERSION = JSON.parse(
  readFileSync(new URL("./node_modules/@aws-sdk/client-sqs/package.json", import.meta.url)),
).version;

const BODY1 = "sqs-core message one";
const BLOB = Uint8Array.from([0x00, 0x01, 0x02, ...Buffer.from("okuri"), 0xff]);
const ATTRS1 = {
  kind: { DataType: "String", StringValue: "greeting" },
  count: { DataType: "Number", StringValue: "42" },
  blob: { DataType: "Binary", BinaryValue: BLOB },
};
const BAD_HANDLE = "not-a-receipt-handle";
const ACCOUNT = "000000000000";
// sqs-fifo's constants.
const ATTEMPT = "sqs-fifo-attempt-1";
const FIFO_NAMES = ["FifoQueue", "ContentBasedDeduplication", "DeduplicationScope", "FifoThroughputLimit"];

class StepFailed extends Error {}

function check(ok, what) {
  if (!ok) throw new StepFailed(what);
}

const md5 = (data) => createHash("md5").update(data).digest("hex");
const isMd5 = (value) => typeof value === "string" && /^[0-9a-f]{32}$/.test(value);
const arn = (queue) => `arn:aws:sqs:us-east-1:${ACCOUNT}:${queue}`;
const ids = (entries) => new Set((entries ?? []).map((e) => e.Id));
const sameSet = (a, b) => a.size === b.size && [...a].every((x) => b.has(x));
const fifoBody = (name) => `sqs-fifo ${name}`;
// A FIFO SequenceNumber: a string of decimal digits (SQS's are 20 long).
const isSequence = (value) => typeof value === "string" && /^\d+$/.test(value);
// sqs-fifo's MAIN queue: every FIFO setting away from its default, and a FIFO dead-letter queue.
const fifoAttributes = (deadQueue) => ({
  FifoQueue: "true",
  ContentBasedDeduplication: "true",
  DeduplicationScope: "messageGroup",
  FifoThroughputLimit: "perMessageGroupId",
  VisibilityTimeout: "30",
  RedrivePolicy: JSON.stringify({ deadLetterTargetArn: arn(deadQueue), maxReceiveCount: "3" }),
});
const show = (value) =>
  JSON.stringify(value, (k, v) => (v instanceof Uint8Array ? Buffer.from(v).toString("hex") : v));

// SQS's digest of message attributes: names sorted; for each, length-prefixed name, data type and
// value, with a transport byte (1 string, 2 binary) before the value.
function md5OfAttributes(attributes) {
  const parts = [];
  const prefixed = (bytes) => {
    const length = Buffer.alloc(4);
    length.writeUInt32BE(bytes.length);
    parts.push(length, Buffer.from(bytes));
  };
  for (const name of Object.keys(attributes).sort()) {
    const { DataType, StringValue, BinaryValue } = attributes[name];
    prefixed(Buffer.from(name, "utf8"));
    prefixed(Buffer.from(DataType, "utf8"));
    if (BinaryValue !== undefined) {
      parts.push(Buffer.from([2]));
      prefixed(Buffer.from(BinaryValue));
    } else {
      parts.push(Buffer.from([1]));
      prefixed(Buffer.from(StringValue, "utf8"));
    }
  }
  return md5(Buffer.concat(parts));
}

function sameAttributes(got, want) {
  const names = Object.keys(want).sort();
  if (show(Object.keys(got ?? {}).sort()) !== show(names)) return false;
  return names.every((n) => {
    const g = got[n];
    const w = want[n];
    if (g.DataType !== w.DataType) return false;
    if (w.BinaryValue !== undefined) {
      return g.BinaryValue !== undefined && Buffer.from(g.BinaryValue).equals(Buffer.from(w.BinaryValue));
    }
    return g.StringValue === w.StringValue;
  });
}

// Run `call`, which must fail with one of `codes`: the shape name (the error's name) or the
// legacy query code the SDK takes from x-amzn-query-error (the error's Code).
async function expectError(call, ...codes) {
  try {
    await call();
  } catch (err) {
    if (err instanceof StepFailed) throw err;
    const seen = [err.name, err.Code].filter(Boolean);
    check(
      seen.some((c) => codes.includes(c)),
      `expected error ${codes.join(" or ")}, got ${seen.join(" / ")}: ${err.message}`,
    );
    return err;
  }
  throw new StepFailed(`expected error ${codes.join(" or ")}, the call succeeded`);
}

// The sqs-core step list.
function sqsCore(send, prefix) {
  const mainQ = prefix + "main";
  const deadQ = prefix + "dead";
  const retryQ = prefix + "retry";
  const missingQ = prefix + "missing";
  const attributes = { VisibilityTimeout: "30", MessageRetentionPeriod: "86400" };
  const kept = {};

  return [
    async function createQueue() {
      const r = await send(
        new CreateQueueCommand({
          QueueName: mainQ,
          Attributes: attributes,
          tags: { team: "compat", tier: "test" },
        }),
      );
      check(r.QueueUrl?.endsWith(`/${ACCOUNT}/${mainQ}`), `queue URL ${r.QueueUrl}`);
      kept.url = r.QueueUrl;
    },
    async function createQueueIdempotent() {
      const r = await send(new CreateQueueCommand({ QueueName: mainQ, Attributes: attributes }));
      check(r.QueueUrl === kept.url, `second create answered ${r.QueueUrl}`);
    },
    async function createQueueConflict() {
      await expectError(
        () =>
          send(
            new CreateQueueCommand({
              QueueName: mainQ,
              Attributes: { ...attributes, VisibilityTimeout: "45" },
            }),
          ),
        "QueueNameExists",
        "QueueAlreadyExists",
      );
    },
    async function getQueueUrl() {
      const r = await send(new GetQueueUrlCommand({ QueueName: mainQ }));
      check(r.QueueUrl === kept.url, `GetQueueUrl answered ${r.QueueUrl}`);
    },
    async function getQueueUrlMissing() {
      await expectError(
        () => send(new GetQueueUrlCommand({ QueueName: missingQ })),
        "QueueDoesNotExist",
        "AWS.SimpleQueueService.NonExistentQueue",
      );
    },
    async function listQueues() {
      const urls = (await send(new ListQueuesCommand({ QueueNamePrefix: prefix }))).QueueUrls ?? [];
      check(show(urls) === show([kept.url]), `ListQueues answered ${show(urls)}`);
    },
    async function setQueueAttributes() {
      await send(
        new SetQueueAttributesCommand({ QueueUrl: kept.url, Attributes: { VisibilityTimeout: "20" } }),
      );
    },
    async function getQueueAttributes() {
      const got = (
        await send(new GetQueueAttributesCommand({ QueueUrl: kept.url, AttributeNames: ["All"] }))
      ).Attributes ?? {};
      const want = {
        VisibilityTimeout: "20",
        MessageRetentionPeriod: "86400",
        DelaySeconds: "0",
        QueueArn: arn(mainQ),
        ApproximateNumberOfMessages: "0",
      };
      const wrong = Object.keys(want).filter((k) => got[k] !== want[k]);
      check(wrong.length === 0, `attributes differ: ${show(Object.fromEntries(wrong.map((k) => [k, got[k]])))}`);
    },
    async function tagQueue() {
      await send(new TagQueueCommand({ QueueUrl: kept.url, Tags: { stage: "replay" } }));
    },
    async function listQueueTags() {
      const tags = (await send(new ListQueueTagsCommand({ QueueUrl: kept.url }))).Tags ?? {};
      const want = { team: "compat", tier: "test", stage: "replay" };
      check(show(sortKeys(tags)) === show(sortKeys(want)), `tags ${show(tags)}`);
    },
    async function untagQueue() {
      await send(new UntagQueueCommand({ QueueUrl: kept.url, TagKeys: ["tier"] }));
    },
    async function listQueueTagsAfterUntag() {
      const tags = (await send(new ListQueueTagsCommand({ QueueUrl: kept.url }))).Tags ?? {};
      const want = { team: "compat", stage: "replay" };
      check(show(sortKeys(tags)) === show(sortKeys(want)), `tags ${show(tags)}`);
    },
    async function sendMessage() {
      // The SDK itself checks MD5OfMessageBody; MD5OfMessageAttributes is checked here.
      const r = await send(
        new SendMessageCommand({
          QueueUrl: kept.url,
          MessageBody: BODY1,
          MessageAttributes: ATTRS1,
          DelaySeconds: 0,
        }),
      );
      check(Boolean(r.MessageId), "no MessageId");
      check(r.MD5OfMessageBody === md5(BODY1), `MD5OfMessageBody ${r.MD5OfMessageBody}`);
      check(isMd5(r.MD5OfMessageAttributes), `MD5OfMessageAttributes ${r.MD5OfMessageAttributes}`);
      check(
        r.MD5OfMessageAttributes === md5OfAttributes(ATTRS1),
        `MD5OfMessageAttributes ${r.MD5OfMessageAttributes}, computed ${md5OfAttributes(ATTRS1)}`,
      );
      kept.id1 = r.MessageId;
      kept.md5Attrs1 = r.MD5OfMessageAttributes;
    },
    async function sendMessageDelayed() {
      const r = await send(
        new SendMessageCommand({ QueueUrl: kept.url, MessageBody: "sqs-core delayed", DelaySeconds: 900 }),
      );
      check(Boolean(r.MessageId), "no MessageId");
    },
    async function sendMessageBatch() {
      const batchAttrs = { kind: { DataType: "String", StringValue: "batch" } };
      const r = await send(
        new SendMessageBatchCommand({
          QueueUrl: kept.url,
          Entries: [
            { Id: "b1", MessageBody: "sqs-core batch one" },
            { Id: "b2", MessageBody: "sqs-core batch two", MessageAttributes: batchAttrs },
          ],
        }),
      );
      check(sameSet(ids(r.Successful), new Set(["b1", "b2"])), `Successful ${show(r.Successful)}`);
      check(!r.Failed?.length, `Failed ${show(r.Failed)}`);
      const bodies = { b1: "sqs-core batch one", b2: "sqs-core batch two" };
      for (const entry of r.Successful) {
        check(entry.MD5OfMessageBody === md5(bodies[entry.Id]), `MD5 of ${show(entry)}`);
      }
      const b2 = r.Successful.find((e) => e.Id === "b2");
      check(b2.MD5OfMessageAttributes === md5OfAttributes(batchAttrs), `MD5OfMessageAttributes of ${show(b2)}`);
    },
    async function sendMessageBatchDuplicateIds() {
      await expectError(
        () =>
          send(
            new SendMessageBatchCommand({
              QueueUrl: kept.url,
              Entries: [
                { Id: "dup", MessageBody: "x" },
                { Id: "dup", MessageBody: "x" },
              ],
            }),
          ),
        "BatchEntryIdsNotDistinct",
        "AWS.SimpleQueueService.BatchEntryIdsNotDistinct",
      );
    },
    async function sendMessageBatchEmpty() {
      await expectError(
        () => send(new SendMessageBatchCommand({ QueueUrl: kept.url, Entries: [] })),
        "EmptyBatchRequest",
        "AWS.SimpleQueueService.EmptyBatchRequest",
      );
    },
    async function sendMessageBatchTooMany() {
      const entries = Array.from({ length: 11 }, (_, i) => ({ Id: `e${i}`, MessageBody: "x" }));
      await expectError(
        () => send(new SendMessageBatchCommand({ QueueUrl: kept.url, Entries: entries })),
        "TooManyEntriesInBatchRequest",
        "AWS.SimpleQueueService.TooManyEntriesInBatchRequest",
      );
    },
    async function receiveMessage() {
      // The SDK itself checks each MD5OfBody.
      const messages =
        (
          await send(
            new ReceiveMessageCommand({
              QueueUrl: kept.url,
              AttributeNames: ["All"],
              MessageAttributeNames: ["All"],
              MaxNumberOfMessages: 10,
              WaitTimeSeconds: 5,
            }),
          )
        ).Messages ?? [];
      const byBody = Object.fromEntries(messages.map((m) => [m.Body, m]));
      const want = new Set([BODY1, "sqs-core batch one", "sqs-core batch two"]);
      check(
        messages.length === 3 && sameSet(new Set(Object.keys(byBody)), want),
        `received ${show(Object.keys(byBody).sort())}`,
      );
      const m1 = byBody[BODY1];
      check(m1.MessageId === kept.id1, `MessageId ${m1.MessageId} != ${kept.id1}`);
      check(sameAttributes(m1.MessageAttributes, ATTRS1), `MessageAttributes ${show(m1.MessageAttributes)}`);
      check(m1.MD5OfBody === md5(BODY1), `MD5OfBody ${m1.MD5OfBody}`);
      check(m1.MD5OfMessageAttributes === kept.md5Attrs1, `MD5OfMessageAttributes ${m1.MD5OfMessageAttributes}`);
      const system = m1.Attributes ?? {};
      check(system.ApproximateReceiveCount === "1", `Attributes ${show(system)}`);
      check(/^\d+$/.test(system.SentTimestamp ?? ""), `SentTimestamp in ${show(system)}`);
      kept.h1 = m1.ReceiptHandle;
      kept.hb1 = byBody["sqs-core batch one"].ReceiptHandle;
      kept.hb2 = byBody["sqs-core batch two"].ReceiptHandle;
    },
    async function changeMessageVisibility() {
      await send(
        new ChangeMessageVisibilityCommand({ QueueUrl: kept.url, ReceiptHandle: kept.h1, VisibilityTimeout: 60 }),
      );
    },
    async function changeMessageVisibilityBatch() {
      const r = await send(
        new ChangeMessageVisibilityBatchCommand({
          QueueUrl: kept.url,
          Entries: [
            { Id: "c1", ReceiptHandle: kept.hb1, VisibilityTimeout: 60 },
            { Id: "c2", ReceiptHandle: kept.hb2, VisibilityTimeout: 60 },
          ],
        }),
      );
      check(sameSet(ids(r.Successful), new Set(["c1", "c2"])), `Successful ${show(r.Successful)}`);
      check(!r.Failed?.length, `Failed ${show(r.Failed)}`);
    },
    async function deleteMessage() {
      await send(new DeleteMessageCommand({ QueueUrl: kept.url, ReceiptHandle: kept.h1 }));
    },
    async function deleteMessageInvalidHandle() {
      await expectError(
        () => send(new DeleteMessageCommand({ QueueUrl: kept.url, ReceiptHandle: BAD_HANDLE })),
        "ReceiptHandleIsInvalid",
      );
    },
    async function deleteMessageBatchPartial() {
      const r = await send(
        new DeleteMessageBatchCommand({
          QueueUrl: kept.url,
          Entries: [
            { Id: "d1", ReceiptHandle: kept.hb1 },
            { Id: "d2", ReceiptHandle: BAD_HANDLE },
          ],
        }),
      );
      check(sameSet(ids(r.Successful), new Set(["d1"])), `Successful ${show(r.Successful)}`);
      const failed = r.Failed ?? [];
      check(
        failed.length === 1 &&
          failed[0].Id === "d2" &&
          failed[0].Code === "ReceiptHandleIsInvalid" &&
          failed[0].SenderFault === true,
        `Failed ${show(failed)}`,
      );
    },
    async function getQueueAttributesCounts() {
      const names = [
        "ApproximateNumberOfMessages",
        "ApproximateNumberOfMessagesNotVisible",
        "ApproximateNumberOfMessagesDelayed",
      ];
      const got =
        (await send(new GetQueueAttributesCommand({ QueueUrl: kept.url, AttributeNames: names }))).Attributes ?? {};
      check(show(names.map((n) => got[n])) === show(["0", "1", "1"]), `counts ${show(got)}`);
    },
    async function purgeQueue() {
      await send(new PurgeQueueCommand({ QueueUrl: kept.url }));
    },
    async function receiveAfterPurge() {
      const r = await send(
        new ReceiveMessageCommand({ QueueUrl: kept.url, MaxNumberOfMessages: 10, WaitTimeSeconds: 0 }),
      );
      check(!r.Messages?.length, `received ${show(r.Messages)}`);
    },
    async function createDeadLetterQueue() {
      kept.deadUrl = (await send(new CreateQueueCommand({ QueueName: deadQ }))).QueueUrl;
      check(kept.deadUrl?.endsWith(`/${ACCOUNT}/${deadQ}`), `queue URL ${kept.deadUrl}`);
    },
    async function createRedriveQueue() {
      const policy = JSON.stringify({ deadLetterTargetArn: arn(deadQ), maxReceiveCount: "1" });
      kept.retryUrl = (
        await send(new CreateQueueCommand({ QueueName: retryQ, Attributes: { RedrivePolicy: policy } }))
      ).QueueUrl;
      check(kept.retryUrl?.endsWith(`/${ACCOUNT}/${retryQ}`), `queue URL ${kept.retryUrl}`);
    },
    async function sendPoison() {
      const r = await send(new SendMessageCommand({ QueueUrl: kept.retryUrl, MessageBody: "sqs-core poison" }));
      check(Boolean(r.MessageId), "no MessageId");
      kept.idp = r.MessageId;
    },
    async function receivePoison() {
      const messages =
        (
          await send(
            new ReceiveMessageCommand({
              QueueUrl: kept.retryUrl,
              AttributeNames: ["ApproximateReceiveCount"],
              VisibilityTimeout: 0,
              WaitTimeSeconds: 5,
            }),
          )
        ).Messages ?? [];
      check(messages.length === 1, `received ${messages.length} messages`);
      check(messages[0].MessageId === kept.idp, `MessageId ${messages[0].MessageId}`);
      const count = messages[0].Attributes?.ApproximateReceiveCount;
      check(count === "1", `ApproximateReceiveCount ${count}`);
    },
    async function receivePoisonAgain() {
      const r = await send(new ReceiveMessageCommand({ QueueUrl: kept.retryUrl, WaitTimeSeconds: 0 }));
      check(!r.Messages?.length, `received ${show(r.Messages)}`);
    },
    async function receiveDeadLetter() {
      const messages =
        (
          await send(
            new ReceiveMessageCommand({
              QueueUrl: kept.deadUrl,
              AttributeNames: ["All"],
              VisibilityTimeout: 0,
              WaitTimeSeconds: 5,
            }),
          )
        ).Messages ?? [];
      check(messages.length === 1, `received ${messages.length} messages`);
      check(messages[0].MessageId === kept.idp, `MessageId ${messages[0].MessageId}`);
      check(messages[0].Body === "sqs-core poison", `Body ${messages[0].Body}`);
    },
    async function listDeadLetterSourceQueues() {
      const urls = (await send(new ListDeadLetterSourceQueuesCommand({ QueueUrl: kept.deadUrl }))).queueUrls ?? [];
      check(show(urls) === show([kept.retryUrl]), `queueUrls ${show(urls)}`);
    },
    async function sendDeadLetterDirect() {
      // DEAD now holds two visible messages with the same body.
      const r = await send(new SendMessageCommand({ QueueUrl: kept.deadUrl, MessageBody: "sqs-core poison" }));
      check(Boolean(r.MessageId), "no MessageId");
    },
    async function startMessageMoveTask() {
      // One message per second: the first moves at once, the second waits a second, so steps
      // 37 and 38 find the task running with exactly one message moved.
      const r = await send(
        new StartMessageMoveTaskCommand({
          SourceArn: arn(deadQ),
          DestinationArn: arn(retryQ),
          MaxNumberOfMessagesPerSecond: 1,
        }),
      );
      check(Boolean(r.TaskHandle), `no TaskHandle in ${show(r)}`);
      kept.task = r.TaskHandle;
    },
    async function listMessageMoveTasks() {
      const results =
        (await send(new ListMessageMoveTasksCommand({ SourceArn: arn(deadQ), MaxResults: 10 }))).Results ?? [];
      check(results.length === 1, `Results ${show(results)}`);
      const task = results[0];
      const want = {
        Status: "RUNNING",
        SourceArn: arn(deadQ),
        DestinationArn: arn(retryQ),
        ApproximateNumberOfMessagesToMove: 2,
        TaskHandle: kept.task,
      };
      const wrong = Object.keys(want).filter((k) => task[k] !== want[k]);
      check(wrong.length === 0, `task differs: ${show(Object.fromEntries(wrong.map((k) => [k, task[k]])))}`);
    },
    async function cancelMessageMoveTask() {
      await send(new CancelMessageMoveTaskCommand({ TaskHandle: kept.task })); // moved 0 or 1: not checked
    },
    async function receiveMoved() {
      const messages =
        (
          await send(
            new ReceiveMessageCommand({ QueueUrl: kept.retryUrl, MaxNumberOfMessages: 10, WaitTimeSeconds: 5 }),
          )
        ).Messages ?? [];
      check(messages.length === 1, `received ${messages.length} messages`);
      check(messages[0].Body === "sqs-core poison", `Body ${messages[0].Body}`);
    },
    async function receiveNotMoved() {
      const messages =
        (
          await send(
            new ReceiveMessageCommand({ QueueUrl: kept.deadUrl, MaxNumberOfMessages: 10, WaitTimeSeconds: 5 }),
          )
        ).Messages ?? [];
      check(messages.length === 1, `received ${messages.length} messages`);
      check(messages[0].Body === "sqs-core poison", `Body ${messages[0].Body}`);
    },
    async function deleteQueues() {
      for (const url of [kept.url, kept.retryUrl, kept.deadUrl]) {
        await send(new DeleteQueueCommand({ QueueUrl: url }));
      }
    },
    async function getQueueUrlDeleted() {
      await expectError(
        () => send(new GetQueueUrlCommand({ QueueName: mainQ })),
        "QueueDoesNotExist",
        "AWS.SimpleQueueService.NonExistentQueue",
      );
    },
    async function listQueuesEmpty() {
      const urls = (await send(new ListQueuesCommand({ QueueNamePrefix: prefix }))).QueueUrls ?? [];
      check(urls.length === 0, `ListQueues answered ${show(urls)}`);
    },
  ];
}

// The sqs-fifo step list: a FIFO queue with every FIFO setting changed and a FIFO dead-letter
// queue; sends to two groups, duplicates by id and by content, a batch; receives in group order
// with the in-flight rule and a retried ReceiveRequestAttemptId; SQS's FIFO errors.
function sqsFifo(send, prefix) {
  const mainQ = prefix + "fifo-main.fifo";
  const deadQ = prefix + "fifo-dead.fifo";
  const kept = {};
  const sendTo = (url, body, group, dedup, more = {}) =>
    send(
      new SendMessageCommand({
        QueueUrl: url,
        MessageBody: body,
        ...(group === undefined ? {} : { MessageGroupId: group }),
        ...(dedup === undefined ? {} : { MessageDeduplicationId: dedup }),
        ...more,
      }),
    );
  // A send's answer, checked: its MessageId and SequenceNumber, the latter after `after`.
  const sent = (r, body, after) => {
    check(Boolean(r.MessageId), `no MessageId in ${show(r)}`);
    check(r.MD5OfMessageBody === md5(body), `MD5OfMessageBody ${show(r)}`);
    check(isSequence(r.SequenceNumber), `SequenceNumber ${r.SequenceNumber}`);
    if (after !== undefined) {
      check(BigInt(r.SequenceNumber) > BigInt(after), `SequenceNumber ${r.SequenceNumber} not after ${after}`);
    }
    return [r.MessageId, r.SequenceNumber];
  };
  const receive = async (params) =>
    (await send(new ReceiveMessageCommand({ QueueUrl: kept.url, ...params }))).Messages ?? [];
  const attributesOf = (m, names) => names.map((n) => (m.Attributes ?? {})[n]);

  return [
    async function createDeadLetterQueue() {
      const r = await send(new CreateQueueCommand({ QueueName: deadQ, Attributes: { FifoQueue: "true" } }));
      check(r.QueueUrl?.endsWith(`/${ACCOUNT}/${deadQ}`), `queue URL ${r.QueueUrl}`);
      kept.deadUrl = r.QueueUrl;
    },
    async function createQueue() {
      const r = await send(new CreateQueueCommand({ QueueName: mainQ, Attributes: fifoAttributes(deadQ) }));
      check(r.QueueUrl?.endsWith(`/${ACCOUNT}/${mainQ}`), `queue URL ${r.QueueUrl}`);
      kept.url = r.QueueUrl;
    },
    async function getQueueAttributes() {
      const got = (
        await send(new GetQueueAttributesCommand({ QueueUrl: kept.url, AttributeNames: ["All"] }))
      ).Attributes ?? {};
      const want = {
        FifoQueue: "true",
        ContentBasedDeduplication: "true",
        DeduplicationScope: "messageGroup",
        FifoThroughputLimit: "perMessageGroupId",
        VisibilityTimeout: "30",
        QueueArn: arn(mainQ),
      };
      const wrong = Object.keys(want).filter((k) => got[k] !== want[k]);
      check(wrong.length === 0, `attributes differ: ${show(Object.fromEntries(wrong.map((k) => [k, got[k]])))}`);
      const policy = JSON.parse(got.RedrivePolicy ?? "{}");
      check(
        policy.deadLetterTargetArn === arn(deadQ) && String(policy.maxReceiveCount) === "3",
        `RedrivePolicy ${got.RedrivePolicy}`,
      );
    },
    async function getDeadLetterQueueAttributes() {
      const got = (
        await send(new GetQueueAttributesCommand({ QueueUrl: kept.deadUrl, AttributeNames: FIFO_NAMES }))
      ).Attributes;
      const want = {
        FifoQueue: "true",
        ContentBasedDeduplication: "false",
        DeduplicationScope: "queue",
        FifoThroughputLimit: "perQueue",
      };
      check(show(sortKeys(got ?? {})) === show(sortKeys(want)), `attributes ${show(got)}`);
    },
    async function sendMessageA1() {
      [kept.idA1, kept.seqA1] = sent(await sendTo(kept.url, fifoBody("a1"), "a", "a1"), fifoBody("a1"));
    },
    async function sendMessageB1() {
      kept.seqB1 = sent(await sendTo(kept.url, fifoBody("b1"), "b", "b1"), fifoBody("b1"), kept.seqA1)[1];
    },
    async function sendMessageA2() {
      kept.seqA2 = sent(await sendTo(kept.url, fifoBody("a2"), "a", "a2"), fifoBody("a2"), kept.seqB1)[1];
    },
    async function sendMessageDuplicate() {
      const r = await sendTo(kept.url, fifoBody("a1"), "a", "a1");
      check(r.MessageId === kept.idA1, `MessageId ${r.MessageId} != ${kept.idA1}`);
    },
    async function sendMessageContentBased() {
      [kept.idB2, kept.seqB2] = sent(await sendTo(kept.url, fifoBody("b2"), "b"), fifoBody("b2"), kept.seqA2);
    },
    async function sendMessageContentDuplicate() {
      const r = await sendTo(kept.url, fifoBody("b2"), "b");
      check(r.MessageId === kept.idB2, `MessageId ${r.MessageId} != ${kept.idB2}`);
    },
    async function sendMessageBatch() {
      const r = await send(
        new SendMessageBatchCommand({
          QueueUrl: kept.url,
          Entries: ["a3", "b3"].map((x) => ({
            Id: x,
            MessageBody: fifoBody(x),
            MessageGroupId: x[0],
            MessageDeduplicationId: x,
          })),
        }),
      );
      check(sameSet(ids(r.Successful), new Set(["a3", "b3"])), `Successful ${show(r.Successful)}`);
      check(!r.Failed?.length, `Failed ${show(r.Failed)}`);
      const byId = Object.fromEntries(r.Successful.map((e) => [e.Id, e]));
      kept.seqA3 = sent(byId.a3, fifoBody("a3"), kept.seqB2)[1];
      kept.seqB3 = sent(byId.b3, fifoBody("b3"), kept.seqA3)[1];
    },
    async function receiveFirst() {
      const messages = await receive({
        MessageSystemAttributeNames: ["All"],
        MaxNumberOfMessages: 1,
        WaitTimeSeconds: 5,
      });
      check(messages.length === 1, `received ${messages.length} messages`);
      const m = messages[0];
      check(m.Body === fifoBody("a1"), `Body ${m.Body}`);
      check(m.MessageId === kept.idA1, `MessageId ${m.MessageId}`);
      const names = ["MessageGroupId", "MessageDeduplicationId", "SequenceNumber", "ApproximateReceiveCount"];
      const got = attributesOf(m, names);
      check(show(got) === show(["a", "a1", kept.seqA1, "1"]), `Attributes ${show(m.Attributes)}`);
      kept.hA1 = m.ReceiptHandle;
    },
    async function receiveOtherGroup() {
      const messages = await receive({
        MessageSystemAttributeNames: ["All"],
        MaxNumberOfMessages: 10,
        WaitTimeSeconds: 5,
        ReceiveRequestAttemptId: ATTEMPT,
      });
      const bodies = messages.map((m) => m.Body);
      check(show(bodies) === show(["b1", "b2", "b3"].map(fifoBody)), `received ${show(bodies)}`);
      const names = ["MessageGroupId", "MessageDeduplicationId", "SequenceNumber"];
      const got = messages.map((m) => attributesOf(m, names));
      const want = [
        ["b", "b1", kept.seqB1],
        ["b", createHash("sha256").update(fifoBody("b2")).digest("hex"), kept.seqB2],
        ["b", "b3", kept.seqB3],
      ];
      check(show(got) === show(want), `Attributes ${show(got)}`);
      kept.hB = messages.map((m) => m.ReceiptHandle);
    },
    async function receiveRetryAttempt() {
      const messages = await receive({
        MessageSystemAttributeNames: ["All"],
        MaxNumberOfMessages: 10,
        WaitTimeSeconds: 5,
        ReceiveRequestAttemptId: ATTEMPT,
      });
      const handles = messages.map((m) => m.ReceiptHandle);
      check(show(handles) === show(kept.hB), `receipt handles ${show(handles)} != ${show(kept.hB)}`);
      const bodies = messages.map((m) => m.Body);
      check(show(bodies) === show(["b1", "b2", "b3"].map(fifoBody)), `received ${show(bodies)}`);
    },
    async function receiveHeldGroup() {
      const messages = await receive({ MaxNumberOfMessages: 10, WaitTimeSeconds: 0 });
      check(messages.length === 0, `received ${show(messages.map((m) => m.Body))}`);
    },
    async function deleteMessage() {
      await send(new DeleteMessageCommand({ QueueUrl: kept.url, ReceiptHandle: kept.hA1 }));
    },
    async function receiveNextInGroup() {
      const messages = await receive({
        MessageSystemAttributeNames: ["MessageGroupId", "SequenceNumber"],
        MaxNumberOfMessages: 10,
        WaitTimeSeconds: 5,
      });
      const bodies = messages.map((m) => m.Body);
      check(show(bodies) === show(["a2", "a3"].map(fifoBody)), `received ${show(bodies)}`);
      const got = messages.map((m) => sortKeys(m.Attributes ?? {}));
      const want = [
        { MessageGroupId: "a", SequenceNumber: kept.seqA2 },
        { MessageGroupId: "a", SequenceNumber: kept.seqA3 },
      ];
      check(show(got) === show(want), `Attributes ${show(got)}`);
      kept.hA = messages.map((m) => m.ReceiptHandle);
    },
    async function deleteMessageBatch() {
      const handles = [...kept.hA, ...kept.hB];
      const names = ["a2", "a3", "b1", "b2", "b3"];
      const r = await send(
        new DeleteMessageBatchCommand({
          QueueUrl: kept.url,
          Entries: names.map((Id, i) => ({ Id, ReceiptHandle: handles[i] })),
        }),
      );
      check(sameSet(ids(r.Successful), new Set(names)), `Successful ${show(r.Successful)}`);
      check(!r.Failed?.length, `Failed ${show(r.Failed)}`);
    },
    async function receiveEmpty() {
      const messages = await receive({ MaxNumberOfMessages: 10, WaitTimeSeconds: 0 });
      check(messages.length === 0, `received ${show(messages.map((m) => m.Body))}`);
    },
    async function sendMessageMissingGroup() {
      await expectError(
        () => sendTo(kept.url, fifoBody("x"), undefined, "x1"),
        "MissingParameter",
        "MissingRequiredParameterException",
      );
    },
    async function sendMessageMissingDeduplicationId() {
      await expectError(
        () => sendTo(kept.deadUrl, fifoBody("x"), "x"),
        "InvalidParameterValue",
        "InvalidParameterValueException",
      );
    },
    async function sendMessageDelay() {
      await expectError(
        () => sendTo(kept.url, fifoBody("x"), "x", "x2", { DelaySeconds: 5 }),
        "InvalidParameterValue",
        "InvalidParameterValueException",
      );
    },
    async function createQueueFifoNameOnly() {
      await expectError(
        () => send(new CreateQueueCommand({ QueueName: prefix + "fifo-plain.fifo" })),
        "InvalidParameterValue",
        "InvalidParameterValueException",
      );
    },
    async function createQueueFifoAttributeOnly() {
      await expectError(
        () =>
          send(new CreateQueueCommand({ QueueName: prefix + "fifo-plain", Attributes: { FifoQueue: "true" } })),
        "InvalidParameterValue",
        "InvalidParameterValueException",
      );
    },
    async function deleteQueues() {
      for (const url of [kept.url, kept.deadUrl]) {
        await send(new DeleteQueueCommand({ QueueUrl: url }));
      }
    },
    async function listQueuesEmpty() {
      const urls = (await send(new ListQueuesCommand({ QueueNamePrefix: prefix + "fifo-" }))).QueueUrls ?? [];
      check(urls.length === 0, `ListQueues answered ${show(urls)}`);
    },
  ];
}

const SCENARIOS = { "sqs-core": sqsCore, "sqs-fifo": sqsFifo };

async function main() {
  const scenario = process.env.OKURI_SCENARIO || DEFAULT_SCENARIO;
  if (!Object.hasOwn(SCENARIOS, scenario)) {
    console.error(`unknown scenario ${scenario}; known: ${Object.keys(SCENARIOS).join(", ")}`);
    return 2;
  }
  const prefix = process.env.OKURI_SCENARIO_PREFIX ?? "js-v3-";
  const sqs = new SQSClient({ maxAttempts: 1 }); // endpoint, keys and region from the environment
  const steps = SCENARIOS[scenario]((command) => sqs.send(command), prefix);

  for (const [index, step] of steps.entries()) {
    const name = step.name.replace(/[A-Z]/g, (c) => "-" + c.toLowerCase());
    try {
      await step();
    } catch (err) {
      const detail = err instanceof StepFailed ? err.message : `${err.name}: ${err.message}`;
      console.error(`step ${index + 1} ${name} failed: ${detail}`);
      return 1;
    }
    console.log(`step ${index + 1} ${name}: ok`);
  }
  const line = [["client", CLIENT], ["version", SDK_VERSION], ["scenario", scenario]]
    .map(([k, v]) => `${JSON.stringify(k)}: ${JSON.stringify(v)}`)
    .join(", ");
  console.log(`SCENARIO {${line}}`);
  return 0;
}

function sortKeys(object) {
  return Object.fromEntries(Object.entries(object).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)));
}

process.exitCode = await main();
