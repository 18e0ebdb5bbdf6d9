// The sqs-core scenario through aws-sdk-go v2 (github.com/aws/aws-sdk-go-v2/service/sqs), whose
// SQS client in this release speaks SQS's query protocol: every step of compat/clients/README.md,
// in order, with the same names, bodies and attribute values as the boto3 reference program.
//
// Configured by the environment: AWS_ENDPOINT_URL (this SDK release does not read it, so the
// program passes it as the endpoint, as a user's program would), AWS_ACCESS_KEY_ID /
// AWS_SECRET_ACCESS_KEY, AWS_REGION (or AWS_DEFAULT_REGION), and OKURI_SCENARIO_PREFIX for
// queue names. No retries, no client-side parameter validation (the empty batch must reach the
// server), no polling loops. Exits 0 only if every check passed; the last stdout line is then
// `SCENARIO {json}` naming the client and the SDK's version.
//
// Two differences from the step list, both this SDK release's:
//   - integer members are plain int32s and a zero is never sent, so ReceiveMessage cannot ask
//     for VisibilityTimeout 0. Steps 28 and 29 give DEAD and RETRY a queue-level
//     VisibilityTimeout of "0" instead, which makes steps 31-33 (and 40) behave as in the other
//     programs; DelaySeconds 0 and WaitTimeSeconds 0 are simply left out (the queue defaults
//     are the same).
//   - the message move task actions (Start/List/CancelMessageMoveTask) are newer than its API
//     model, so steps 36-38 are reported as skipped. Steps 39 and 40 send the step list's
//     requests, but with no task nothing moves: step 39 expects RETRY to stay empty for its
//     whole wait and step 40 both of DEAD's messages.
package main

import (
	"bytes"
	"context"
	"crypto/md5"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"reflect"
	"regexp"
	"sort"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/aws/smithy-go"
	"github.com/aws/smithy-go/middleware"
	smithyhttp "github.com/aws/smithy-go/transport/http"
)

const (
	client      = "aws-sdk-go-v2"
	scenario    = "sqs-core"
	body1       = "sqs-core message one"
	badHandle   = "not-a-receipt-handle"
	account     = "000000000000"
	httpTimeout = 30 * time.Second
)

var (
	blob   = []byte("\x00\x01\x02okuri\xff")
	attrs1 = map[string]types.MessageAttributeValue{
		"kind":  {DataType: aws.String("String"), StringValue: aws.String("greeting")},
		"count": {DataType: aws.String("Number"), StringValue: aws.String("42")},
		"blob":  {DataType: aws.String("Binary"), BinaryValue: blob},
	}
	hexMD5 = regexp.MustCompile(`^[0-9a-f]{32}$`)
	digits = regexp.MustCompile(`^[0-9]+$`)
)

// errSkipped marks a step this SDK cannot express.
var errSkipped = errors.New("skipped")

type stepFailed struct{ what string }

func (e stepFailed) Error() string { return e.what }

func check(ok bool, format string, args ...any) {
	if !ok {
		panic(stepFailed{fmt.Sprintf(format, args...)})
	}
}

// must fails the step on an unexpected SDK error.
func must(err error) {
	if err != nil {
		panic(stepFailed{"unexpected error: " + err.Error()})
	}
}

// expectError checks that err is an SDK error with one of the codes (legacy query code or shape
// name).
func expectError(err error, codes ...string) {
	want := strings.Join(codes, " or ")
	check(err != nil, "expected error %s, the call succeeded", want)
	var aerr smithy.APIError
	check(errors.As(err, &aerr), "expected error %s, got a non-API error: %v", want, err)
	for _, c := range codes {
		if aerr.ErrorCode() == c {
			return
		}
	}
	check(false, "expected error %s, got %s: %s", want, aerr.ErrorCode(), aerr.ErrorMessage())
}

func md5Hex(data []byte) string {
	sum := md5.Sum(data)
	return hex.EncodeToString(sum[:])
}

func arn(queue string) string { return "arn:aws:sqs:us-east-1:" + account + ":" + queue }

// md5OfAttributes is SQS's digest of message attributes: names sorted; for each, length-prefixed
// name, data type and value, with a transport byte (1 string, 2 binary) before the value.
func md5OfAttributes(attrs map[string]types.MessageAttributeValue) string {
	var buf bytes.Buffer
	prefixed := func(b []byte) {
		_ = binary.Write(&buf, binary.BigEndian, uint32(len(b)))
		buf.Write(b)
	}
	names := make([]string, 0, len(attrs))
	for name := range attrs {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		v := attrs[name]
		prefixed([]byte(name))
		prefixed([]byte(aws.ToString(v.DataType)))
		if v.BinaryValue != nil {
			buf.WriteByte(2)
			prefixed(v.BinaryValue)
		} else {
			buf.WriteByte(1)
			prefixed([]byte(aws.ToString(v.StringValue)))
		}
	}
	return md5Hex(buf.Bytes())
}

func sameAttributes(got, want map[string]types.MessageAttributeValue) bool {
	if len(got) != len(want) {
		return false
	}
	for name, w := range want {
		g, ok := got[name]
		if !ok || aws.ToString(g.DataType) != aws.ToString(w.DataType) {
			return false
		}
		if w.BinaryValue != nil {
			if !bytes.Equal(g.BinaryValue, w.BinaryValue) {
				return false
			}
		} else if aws.ToString(g.StringValue) != aws.ToString(w.StringValue) {
			return false
		}
	}
	return true
}

func ids(entries any) map[string]bool {
	out := map[string]bool{}
	switch es := entries.(type) {
	case []types.SendMessageBatchResultEntry:
		for _, e := range es {
			out[aws.ToString(e.Id)] = true
		}
	case []types.ChangeMessageVisibilityBatchResultEntry:
		for _, e := range es {
			out[aws.ToString(e.Id)] = true
		}
	case []types.DeleteMessageBatchResultEntry:
		for _, e := range es {
			out[aws.ToString(e.Id)] = true
		}
	}
	return out
}

func set(items ...string) map[string]bool {
	out := map[string]bool{}
	for _, i := range items {
		out[i] = true
	}
	return out
}

func show(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}

func env(names ...string) string {
	for _, n := range names {
		if v := os.Getenv(n); v != "" {
			return v
		}
	}
	return ""
}

type step struct {
	name string
	run  func() error
}

func main() {
	os.Exit(run())
}

func run() int {
	prefix := env("OKURI_SCENARIO_PREFIX")
	if prefix == "" {
		prefix = "go-v2-"
	}
	endpoint := env("AWS_ENDPOINT_URL")
	if endpoint == "" {
		fmt.Fprintln(os.Stderr, "AWS_ENDPOINT_URL is not set: point it at okuri")
		return 2
	}
	region := env("AWS_REGION", "AWS_DEFAULT_REGION")
	ctx := context.Background()
	cfg, err := config.LoadDefaultConfig(ctx,
		config.WithRegion(region),
		config.WithRetryer(func() aws.Retryer { return aws.NopRetryer{} }),
		config.WithHTTPClient(awshttp.NewBuildableClient().WithTimeout(httpTimeout)),
	)
	if err != nil {
		fmt.Fprintln(os.Stderr, "cannot load the SDK configuration:", err)
		return 2
	}
	var sqsVersion string
	c := sqs.NewFromConfig(cfg, func(o *sqs.Options) {
		o.EndpointResolver = sqs.EndpointResolverFromURL(endpoint)
		o.APIOptions = append(o.APIOptions, skipInputValidation, captureModuleVersion(&sqsVersion))
	})

	mainQ, deadQ, retryQ, missingQ := prefix+"main", prefix+"dead", prefix+"retry", prefix+"missing"
	attributes := map[string]string{
		"VisibilityTimeout":      "30",
		"MessageRetentionPeriod": "86400",
	}
	var url, deadURL, retryURL, id1, md5Attrs1, h1, hb1, hb2, idp string

	steps := []step{
		{"create-queue", func() error {
			r, err := c.CreateQueue(ctx, &sqs.CreateQueueInput{
				QueueName:  aws.String(mainQ),
				Attributes: attributes,
				Tags:       map[string]string{"team": "compat", "tier": "test"},
			})
			must(err)
			url = aws.ToString(r.QueueUrl)
			check(strings.HasSuffix(url, "/"+account+"/"+mainQ), "queue URL %s", url)
			return nil
		}},
		{"create-queue-idempotent", func() error {
			r, err := c.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String(mainQ), Attributes: attributes})
			must(err)
			check(aws.ToString(r.QueueUrl) == url, "second create answered %s", aws.ToString(r.QueueUrl))
			return nil
		}},
		{"create-queue-conflict", func() error {
			_, err := c.CreateQueue(ctx, &sqs.CreateQueueInput{
				QueueName: aws.String(mainQ),
				Attributes: map[string]string{
					"VisibilityTimeout":      "45",
					"MessageRetentionPeriod": "86400",
				},
			})
			expectError(err, "QueueAlreadyExists", "QueueNameExists")
			return nil
		}},
		{"get-queue-url", func() error {
			r, err := c.GetQueueUrl(ctx, &sqs.GetQueueUrlInput{QueueName: aws.String(mainQ)})
			must(err)
			check(aws.ToString(r.QueueUrl) == url, "GetQueueUrl answered %s", aws.ToString(r.QueueUrl))
			return nil
		}},
		{"get-queue-url-missing", func() error {
			_, err := c.GetQueueUrl(ctx, &sqs.GetQueueUrlInput{QueueName: aws.String(missingQ)})
			expectError(err, "AWS.SimpleQueueService.NonExistentQueue", "QueueDoesNotExist")
			return nil
		}},
		{"list-queues", func() error {
			r, err := c.ListQueues(ctx, &sqs.ListQueuesInput{QueueNamePrefix: aws.String(prefix)})
			must(err)
			urls := r.QueueUrls
			check(reflect.DeepEqual(urls, []string{url}), "ListQueues answered %s", show(urls))
			return nil
		}},
		{"set-queue-attributes", func() error {
			_, err := c.SetQueueAttributes(ctx, &sqs.SetQueueAttributesInput{
				QueueUrl:   aws.String(url),
				Attributes: map[string]string{"VisibilityTimeout": "20"},
			})
			must(err)
			return nil
		}},
		{"get-queue-attributes", func() error {
			r, err := c.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{
				QueueUrl: aws.String(url), AttributeNames: []types.QueueAttributeName{"All"},
			})
			must(err)
			got := r.Attributes
			want := map[string]string{
				"VisibilityTimeout":           "20",
				"MessageRetentionPeriod":      "86400",
				"DelaySeconds":                "0",
				"QueueArn":                    arn(mainQ),
				"ApproximateNumberOfMessages": "0",
			}
			wrong := map[string]string{}
			for k, v := range want {
				if got[k] != v {
					wrong[k] = got[k]
				}
			}
			check(len(wrong) == 0, "attributes differ: %s", show(wrong))
			return nil
		}},
		{"tag-queue", func() error {
			_, err := c.TagQueue(ctx, &sqs.TagQueueInput{
				QueueUrl: aws.String(url), Tags: map[string]string{"stage": "replay"},
			})
			must(err)
			return nil
		}},
		{"list-queue-tags", func() error {
			r, err := c.ListQueueTags(ctx, &sqs.ListQueueTagsInput{QueueUrl: aws.String(url)})
			must(err)
			tags := r.Tags
			want := map[string]string{"team": "compat", "tier": "test", "stage": "replay"}
			check(reflect.DeepEqual(tags, want), "tags %s", show(tags))
			return nil
		}},
		{"untag-queue", func() error {
			_, err := c.UntagQueue(ctx, &sqs.UntagQueueInput{
				QueueUrl: aws.String(url), TagKeys: []string{"tier"},
			})
			must(err)
			return nil
		}},
		{"list-queue-tags-after-untag", func() error {
			r, err := c.ListQueueTags(ctx, &sqs.ListQueueTagsInput{QueueUrl: aws.String(url)})
			must(err)
			tags := r.Tags
			want := map[string]string{"team": "compat", "stage": "replay"}
			check(reflect.DeepEqual(tags, want), "tags %s", show(tags))
			return nil
		}},
		{"send-message", func() error {
			// The SDK itself checks MD5OfMessageBody; MD5OfMessageAttributes is checked here.
			r, err := c.SendMessage(ctx, &sqs.SendMessageInput{
				QueueUrl:          aws.String(url),
				MessageBody:       aws.String(body1),
				MessageAttributes: attrs1,
				// DelaySeconds 0: this SDK never sends a zero; 0 is the default.
			})
			must(err)
			id1, md5Attrs1 = aws.ToString(r.MessageId), aws.ToString(r.MD5OfMessageAttributes)
			check(id1 != "", "no MessageId")
			check(aws.ToString(r.MD5OfMessageBody) == md5Hex([]byte(body1)), "MD5OfMessageBody %s", aws.ToString(r.MD5OfMessageBody))
			check(hexMD5.MatchString(md5Attrs1), "MD5OfMessageAttributes %q", md5Attrs1)
			check(md5Attrs1 == md5OfAttributes(attrs1), "MD5OfMessageAttributes %s, computed %s", md5Attrs1, md5OfAttributes(attrs1))
			return nil
		}},
		{"send-message-delayed", func() error {
			r, err := c.SendMessage(ctx, &sqs.SendMessageInput{
				QueueUrl: aws.String(url), MessageBody: aws.String("sqs-core delayed"), DelaySeconds: int32(900),
			})
			must(err)
			check(aws.ToString(r.MessageId) != "", "no MessageId")
			return nil
		}},
		{"send-message-batch", func() error {
			batchAttrs := map[string]types.MessageAttributeValue{
				"kind": {DataType: aws.String("String"), StringValue: aws.String("batch")},
			}
			r, err := c.SendMessageBatch(ctx, &sqs.SendMessageBatchInput{
				QueueUrl: aws.String(url),
				Entries: []types.SendMessageBatchRequestEntry{
					{Id: aws.String("b1"), MessageBody: aws.String("sqs-core batch one")},
					{Id: aws.String("b2"), MessageBody: aws.String("sqs-core batch two"), MessageAttributes: batchAttrs},
				},
			})
			must(err)
			check(reflect.DeepEqual(ids(r.Successful), set("b1", "b2")), "Successful %s", show(r.Successful))
			check(len(r.Failed) == 0, "Failed %s", show(r.Failed))
			bodies := map[string]string{"b1": "sqs-core batch one", "b2": "sqs-core batch two"}
			for _, e := range r.Successful {
				check(aws.ToString(e.MD5OfMessageBody) == md5Hex([]byte(bodies[aws.ToString(e.Id)])), "MD5 of %s", show(e))
				if aws.ToString(e.Id) == "b2" {
					check(aws.ToString(e.MD5OfMessageAttributes) == md5OfAttributes(batchAttrs), "MD5OfMessageAttributes of %s", show(e))
				}
			}
			return nil
		}},
		{"send-message-batch-duplicate-ids", func() error {
			_, err := c.SendMessageBatch(ctx, &sqs.SendMessageBatchInput{
				QueueUrl: aws.String(url),
				Entries: []types.SendMessageBatchRequestEntry{
					{Id: aws.String("dup"), MessageBody: aws.String("x")},
					{Id: aws.String("dup"), MessageBody: aws.String("x")},
				},
			})
			expectError(err, "AWS.SimpleQueueService.BatchEntryIdsNotDistinct", "BatchEntryIdsNotDistinct")
			return nil
		}},
		{"send-message-batch-empty", func() error {
			_, err := c.SendMessageBatch(ctx, &sqs.SendMessageBatchInput{
				QueueUrl: aws.String(url), Entries: []types.SendMessageBatchRequestEntry{},
			})
			expectError(err, "AWS.SimpleQueueService.EmptyBatchRequest", "EmptyBatchRequest")
			return nil
		}},
		{"send-message-batch-too-many", func() error {
			entries := []types.SendMessageBatchRequestEntry{}
			for i := 0; i < 11; i++ {
				entries = append(entries, types.SendMessageBatchRequestEntry{
					Id: aws.String(fmt.Sprintf("e%d", i)), MessageBody: aws.String("x"),
				})
			}
			_, err := c.SendMessageBatch(ctx, &sqs.SendMessageBatchInput{QueueUrl: aws.String(url), Entries: entries})
			expectError(err, "AWS.SimpleQueueService.TooManyEntriesInBatchRequest", "TooManyEntriesInBatchRequest")
			return nil
		}},
		{"receive-message", func() error {
			// The SDK itself checks each MD5OfBody.
			r, err := c.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{
				QueueUrl:              aws.String(url),
				AttributeNames:        []types.QueueAttributeName{"All"},
				MessageAttributeNames: []string{"All"},
				MaxNumberOfMessages:   int32(10),
				WaitTimeSeconds:       int32(5),
			})
			must(err)
			byBody := map[string]types.Message{}
			bodies := []string{}
			for _, m := range r.Messages {
				byBody[aws.ToString(m.Body)] = m
				bodies = append(bodies, aws.ToString(m.Body))
			}
			sort.Strings(bodies)
			want := set(body1, "sqs-core batch one", "sqs-core batch two")
			check(len(r.Messages) == 3 && reflect.DeepEqual(set(bodies...), want), "received %s", show(bodies))
			m1 := byBody[body1]
			check(aws.ToString(m1.MessageId) == id1, "MessageId %s != %s", aws.ToString(m1.MessageId), id1)
			check(sameAttributes(m1.MessageAttributes, attrs1), "MessageAttributes %s", show(m1.MessageAttributes))
			check(aws.ToString(m1.MD5OfBody) == md5Hex([]byte(body1)), "MD5OfBody %s", aws.ToString(m1.MD5OfBody))
			check(aws.ToString(m1.MD5OfMessageAttributes) == md5Attrs1, "MD5OfMessageAttributes %s", aws.ToString(m1.MD5OfMessageAttributes))
			system := m1.Attributes
			check(system["ApproximateReceiveCount"] == "1", "Attributes %s", show(system))
			check(digits.MatchString(system["SentTimestamp"]), "SentTimestamp in %s", show(system))
			h1 = aws.ToString(m1.ReceiptHandle)
			hb1 = aws.ToString(byBody["sqs-core batch one"].ReceiptHandle)
			hb2 = aws.ToString(byBody["sqs-core batch two"].ReceiptHandle)
			return nil
		}},
		{"change-message-visibility", func() error {
			_, err := c.ChangeMessageVisibility(ctx, &sqs.ChangeMessageVisibilityInput{
				QueueUrl: aws.String(url), ReceiptHandle: aws.String(h1), VisibilityTimeout: int32(60),
			})
			must(err)
			return nil
		}},
		{"change-message-visibility-batch", func() error {
			r, err := c.ChangeMessageVisibilityBatch(ctx, &sqs.ChangeMessageVisibilityBatchInput{
				QueueUrl: aws.String(url),
				Entries: []types.ChangeMessageVisibilityBatchRequestEntry{
					{Id: aws.String("c1"), ReceiptHandle: aws.String(hb1), VisibilityTimeout: int32(60)},
					{Id: aws.String("c2"), ReceiptHandle: aws.String(hb2), VisibilityTimeout: int32(60)},
				},
			})
			must(err)
			check(reflect.DeepEqual(ids(r.Successful), set("c1", "c2")), "Successful %s", show(r.Successful))
			check(len(r.Failed) == 0, "Failed %s", show(r.Failed))
			return nil
		}},
		{"delete-message", func() error {
			_, err := c.DeleteMessage(ctx, &sqs.DeleteMessageInput{QueueUrl: aws.String(url), ReceiptHandle: aws.String(h1)})
			must(err)
			return nil
		}},
		{"delete-message-invalid-handle", func() error {
			_, err := c.DeleteMessage(ctx, &sqs.DeleteMessageInput{QueueUrl: aws.String(url), ReceiptHandle: aws.String(badHandle)})
			expectError(err, "ReceiptHandleIsInvalid")
			return nil
		}},
		{"delete-message-batch-partial", func() error {
			r, err := c.DeleteMessageBatch(ctx, &sqs.DeleteMessageBatchInput{
				QueueUrl: aws.String(url),
				Entries: []types.DeleteMessageBatchRequestEntry{
					{Id: aws.String("d1"), ReceiptHandle: aws.String(hb1)},
					{Id: aws.String("d2"), ReceiptHandle: aws.String(badHandle)},
				},
			})
			must(err)
			check(reflect.DeepEqual(ids(r.Successful), set("d1")), "Successful %s", show(r.Successful))
			f := r.Failed
			check(len(f) == 1 &&
				aws.ToString(f[0].Id) == "d2" &&
				aws.ToString(f[0].Code) == "ReceiptHandleIsInvalid" &&
				f[0].SenderFault, "Failed %s", show(f))
			return nil
		}},
		{"get-queue-attributes-counts", func() error {
			names := []string{
				"ApproximateNumberOfMessages",
				"ApproximateNumberOfMessagesNotVisible",
				"ApproximateNumberOfMessagesDelayed",
			}
			r, err := c.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{
				QueueUrl: aws.String(url), AttributeNames: attributeNames(names),
			})
			must(err)
			got := r.Attributes
			counts := []string{got[names[0]], got[names[1]], got[names[2]]}
			check(reflect.DeepEqual(counts, []string{"0", "1", "1"}), "counts %s", show(got))
			return nil
		}},
		{"purge-queue", func() error {
			_, err := c.PurgeQueue(ctx, &sqs.PurgeQueueInput{QueueUrl: aws.String(url)})
			must(err)
			return nil
		}},
		{"receive-after-purge", func() error {
			r, err := c.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{
				QueueUrl: aws.String(url), MaxNumberOfMessages: int32(10), // WaitTimeSeconds 0: the default
			})
			must(err)
			check(len(r.Messages) == 0, "received %s", show(r.Messages))
			return nil
		}},
		{"create-dead-letter-queue", func() error {
			r, err := c.CreateQueue(ctx, &sqs.CreateQueueInput{
				QueueName: aws.String(deadQ),
				// VisibilityTimeout "0": this SDK cannot send ReceiveMessage's VisibilityTimeout 0.
				Attributes: map[string]string{"VisibilityTimeout": "0"},
			})
			must(err)
			deadURL = aws.ToString(r.QueueUrl)
			check(strings.HasSuffix(deadURL, "/"+account+"/"+deadQ), "queue URL %s", deadURL)
			return nil
		}},
		{"create-redrive-queue", func() error {
			policy := `{"deadLetterTargetArn":"` + arn(deadQ) + `","maxReceiveCount":"1"}`
			r, err := c.CreateQueue(ctx, &sqs.CreateQueueInput{
				QueueName: aws.String(retryQ),
				// VisibilityTimeout "0": this SDK cannot send ReceiveMessage's VisibilityTimeout 0.
				Attributes: map[string]string{"RedrivePolicy": policy, "VisibilityTimeout": "0"},
			})
			must(err)
			retryURL = aws.ToString(r.QueueUrl)
			check(strings.HasSuffix(retryURL, "/"+account+"/"+retryQ), "queue URL %s", retryURL)
			return nil
		}},
		{"send-poison", func() error {
			r, err := c.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(retryURL), MessageBody: aws.String("sqs-core poison")})
			must(err)
			idp = aws.ToString(r.MessageId)
			check(idp != "", "no MessageId")
			return nil
		}},
		{"receive-poison", func() error {
			r, err := c.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{
				QueueUrl:        aws.String(retryURL),
				AttributeNames:  []types.QueueAttributeName{"ApproximateReceiveCount"},
				WaitTimeSeconds: int32(5), // VisibilityTimeout 0 is the queue's own (step 29)
			})
			must(err)
			check(len(r.Messages) == 1, "received %d messages", len(r.Messages))
			m := r.Messages[0]
			check(aws.ToString(m.MessageId) == idp, "MessageId %s", aws.ToString(m.MessageId))
			count := m.Attributes["ApproximateReceiveCount"]
			check(count == "1", "ApproximateReceiveCount %s", count)
			return nil
		}},
		{"receive-poison-again", func() error {
			r, err := c.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(retryURL)}) // WaitTimeSeconds 0
			must(err)
			check(len(r.Messages) == 0, "received %s", show(r.Messages))
			return nil
		}},
		{"receive-dead-letter", func() error {
			r, err := c.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{
				QueueUrl:        aws.String(deadURL),
				AttributeNames:  []types.QueueAttributeName{"All"},
				WaitTimeSeconds: int32(5), // VisibilityTimeout 0 is the queue's own (step 28)
			})
			must(err)
			check(len(r.Messages) == 1, "received %d messages", len(r.Messages))
			m := r.Messages[0]
			check(aws.ToString(m.MessageId) == idp, "MessageId %s", aws.ToString(m.MessageId))
			check(aws.ToString(m.Body) == "sqs-core poison", "Body %s", aws.ToString(m.Body))
			return nil
		}},
		{"list-dead-letter-source-queues", func() error {
			r, err := c.ListDeadLetterSourceQueues(ctx, &sqs.ListDeadLetterSourceQueuesInput{QueueUrl: aws.String(deadURL)})
			must(err)
			urls := r.QueueUrls
			check(reflect.DeepEqual(urls, []string{retryURL}), "queueUrls %s", show(urls))
			return nil
		}},
		{"send-dead-letter-direct", func() error {
			r, err := c.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(deadURL), MessageBody: aws.String("sqs-core poison")})
			must(err)
			check(aws.ToString(r.MessageId) != "", "no MessageId")
			return nil
		}},
		{"start-message-move-task", func() error { return errSkipped }},
		{"list-message-move-tasks", func() error { return errSkipped }},
		{"cancel-message-move-task", func() error { return errSkipped }},
		{"receive-moved", func() error {
			// No task ran (steps 36-38), so nothing moved: RETRY stays empty for the whole wait.
			r, err := c.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{
				QueueUrl: aws.String(retryURL), MaxNumberOfMessages: int32(10), WaitTimeSeconds: int32(5),
			})
			must(err)
			check(len(r.Messages) == 0, "received %s", show(r.Messages))
			return nil
		}},
		{"receive-not-moved", func() error {
			// No task ran, so DEAD still holds both of its visible messages (steps 33 and 35).
			r, err := c.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{
				QueueUrl: aws.String(deadURL), MaxNumberOfMessages: int32(10), WaitTimeSeconds: int32(5),
			})
			must(err)
			check(len(r.Messages) == 2, "received %d messages", len(r.Messages))
			for _, m := range r.Messages {
				check(aws.ToString(m.Body) == "sqs-core poison", "Body %s", aws.ToString(m.Body))
			}
			return nil
		}},
		{"delete-queues", func() error {
			for _, u := range []string{url, retryURL, deadURL} {
				_, err := c.DeleteQueue(ctx, &sqs.DeleteQueueInput{QueueUrl: aws.String(u)})
				must(err)
			}
			return nil
		}},
		{"get-queue-url-deleted", func() error {
			_, err := c.GetQueueUrl(ctx, &sqs.GetQueueUrlInput{QueueName: aws.String(mainQ)})
			expectError(err, "AWS.SimpleQueueService.NonExistentQueue", "QueueDoesNotExist")
			return nil
		}},
		{"list-queues-empty", func() error {
			r, err := c.ListQueues(ctx, &sqs.ListQueuesInput{QueueNamePrefix: aws.String(prefix)})
			must(err)
			check(len(r.QueueUrls) == 0, "ListQueues answered %s", show(r.QueueUrls))
			return nil
		}},
	}

	for i, s := range steps {
		if err := runStep(s); err != nil {
			if errors.Is(err, errSkipped) {
				fmt.Printf("step %d %s: skipped (not in aws-sdk-go-v2 service/sqs %s's API)\n", i+1, s.name, sqsVersion)
				continue
			}
			fmt.Fprintf(os.Stderr, "step %d %s failed: %v\n", i+1, s.name, err)
			return 1
		}
		fmt.Printf("step %d %s: ok\n", i+1, s.name)
	}
	fmt.Println(scenarioLine(fmt.Sprintf("%s (service/sqs %s)", aws.SDKVersion, sqsVersion)))
	return 0
}

// skipInputValidation drops the SDK's own check of required members, so that requests it would
// refuse (an empty batch) reach the server, as the step list asks.
func skipInputValidation(stack *middleware.Stack) error {
	_, _ = stack.Initialize.Remove("OperationInputValidation") // absent for some operations
	return nil
}

// captureModuleVersion records the service/sqs module's version from the User-Agent the SDK
// sends ("api/sqs/1.19.12"): the module keeps it in an unexported constant.
func captureModuleVersion(into *string) func(*middleware.Stack) error {
	return func(stack *middleware.Stack) error {
		return stack.Finalize.Add(middleware.FinalizeMiddlewareFunc("CaptureModuleVersion",
			func(ctx context.Context, in middleware.FinalizeInput, next middleware.FinalizeHandler) (
				middleware.FinalizeOutput, middleware.Metadata, error,
			) {
				if req, ok := in.Request.(*smithyhttp.Request); ok {
					for _, field := range strings.Fields(req.Header.Get("User-Agent")) {
						if v := strings.TrimPrefix(field, "api/sqs/"); v != field {
							*into = v
						}
					}
				}
				return next.HandleFinalize(ctx, in)
			}), middleware.After)
	}
}

func attributeNames(names []string) []types.QueueAttributeName {
	out := make([]types.QueueAttributeName, len(names))
	for i, n := range names {
		out[i] = types.QueueAttributeName(n)
	}
	return out
}

// runStep turns a failed check (a panic with stepFailed) into an error.
func runStep(s step) (err error) {
	defer func() {
		if r := recover(); r != nil {
			f, ok := r.(stepFailed)
			if !ok {
				panic(r)
			}
			err = f
		}
	}()
	return s.run()
}

// scenarioLine is the contract's last stdout line, laid out as the other programs print it.
func scenarioLine(version string) string {
	q := func(s string) string {
		b, _ := json.Marshal(s)
		return string(b)
	}
	return fmt.Sprintf(`SCENARIO {"client": %s, "version": %s, "scenario": %s}`, q(client), q(version), q(scenario))
}
