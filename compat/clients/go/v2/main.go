// The sqs-core and sqs-fifo scenarios through aws-sdk-go v2
// (github.com/aws/aws-sdk-go-v2/service/sqs), whose SQS client in this release speaks SQS's
// query protocol: every step of compat/clients/README.md, in order, with the same names, bodies
// and attribute values as the boto3 reference program.
//
// Configured by the environment: AWS_ENDPOINT_URL (this SDK release does not read it, so the
// program passes it as the endpoint, as a user's program would), AWS_ACCESS_KEY_ID /
// AWS_SECRET_ACCESS_KEY, AWS_REGION (or AWS_DEFAULT_REGION), OKURI_SCENARIO_PREFIX for queue
// names and OKURI_SCENARIO for the scenario (sqs-core when unset). No retries, no client-side
// parameter validation (the empty batch must reach the server), no polling loops. Exits 0 only
// if every check passed; the last stdout line is then `SCENARIO {json}` naming the client, the
// SDK's version and the scenario.
//
// Two differences from the sqs-core step list, both this SDK release's (for sqs-fifo, see fifoSteps):
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
	"context"
	"errors"
	"fmt"
	"os"
	"reflect"
	"sort"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/aws/smithy-go"
	"github.com/aws/smithy-go/middleware"
	smithyhttp "github.com/aws/smithy-go/transport/http"

	"sqscore"
)

const client = "aws-sdk-go-v2"

var attrs1 = map[string]types.MessageAttributeValue{
	"kind":  {DataType: aws.String("String"), StringValue: aws.String("greeting")},
	"count": {DataType: aws.String("Number"), StringValue: aws.String("42")},
	"blob":  {DataType: aws.String("Binary"), BinaryValue: sqscore.Blob},
}

// expectError checks that err is an SDK error with one of the codes (legacy query code or shape
// name).
func expectError(err error, codes ...string) {
	sqscore.ExpectError(apiError, err, codes...)
}

// apiError reads the error the SDK parsed from a response (smithy.APIError).
func apiError(err error) (code, message string, ok bool) {
	var aerr smithy.APIError
	if !errors.As(err, &aerr) {
		return "", "", false
	}
	return aerr.ErrorCode(), aerr.ErrorMessage(), true
}

// plainAttrs are message attributes in the form sqscore's digest and comparison take.
func plainAttrs(attrs map[string]types.MessageAttributeValue) map[string]sqscore.Attribute {
	out := make(map[string]sqscore.Attribute, len(attrs))
	for name, v := range attrs {
		out[name] = sqscore.Attribute{
			DataType:    aws.ToString(v.DataType),
			StringValue: aws.ToString(v.StringValue),
			BinaryValue: v.BinaryValue,
		}
	}
	return out
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

func main() {
	os.Exit(run())
}

func run() int {
	settings, err := sqscore.ReadSettings("go-v2-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	prefix := settings.Prefix
	ctx := context.Background()
	cfg, err := config.LoadDefaultConfig(ctx,
		config.WithRegion(settings.Region),
		config.WithRetryer(func() aws.Retryer { return aws.NopRetryer{} }),
		config.WithHTTPClient(awshttp.NewBuildableClient().WithTimeout(sqscore.HTTPTimeout)),
	)
	if err != nil {
		fmt.Fprintln(os.Stderr, "cannot load the SDK configuration:", err)
		return 2
	}
	var sqsVersion string
	c := sqs.NewFromConfig(cfg, func(o *sqs.Options) {
		o.EndpointResolver = sqs.EndpointResolverFromURL(settings.Endpoint)
		o.APIOptions = append(o.APIOptions, skipInputValidation, captureModuleVersion(&sqsVersion))
	})

	steps := coreSteps(ctx, c, prefix)
	if settings.Scenario == sqscore.FifoScenario {
		steps = fifoSteps(ctx, c, prefix)
	}

	skipped := func() string { return fmt.Sprintf("not in aws-sdk-go-v2 service/sqs %s's API", sqsVersion) }
	if !sqscore.RunSteps(steps, skipped) {
		return 1
	}
	version := fmt.Sprintf("%s (service/sqs %s)", aws.SDKVersion, sqsVersion)
	fmt.Println(sqscore.ScenarioLine(client, version, settings.Scenario))
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

// coreSteps is the sqs-core step list.
func coreSteps(ctx context.Context, c *sqs.Client, prefix string) []sqscore.Step {
	mainQ, deadQ, retryQ, missingQ := prefix+"main", prefix+"dead", prefix+"retry", prefix+"missing"
	attributes := map[string]string{
		"VisibilityTimeout":      "30",
		"MessageRetentionPeriod": "86400",
	}
	var url, deadURL, retryURL, id1, md5Attrs1, h1, hb1, hb2, idp string

	// receivePoison receives from queueURL (whose own VisibilityTimeout is 0, steps 28 and 29),
	// asking for one attribute, and checks that the one message it answers is the poison
	// message (steps 31 and 33).
	receivePoison := func(queueURL string, attribute types.QueueAttributeName) types.Message {
		r, err := c.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{
			QueueUrl:        aws.String(queueURL),
			AttributeNames:  []types.QueueAttributeName{attribute},
			WaitTimeSeconds: int32(5),
		})
		sqscore.Must(err)
		sqscore.Check(len(r.Messages) == 1, "received %d messages", len(r.Messages))
		m := r.Messages[0]
		sqscore.Check(aws.ToString(m.MessageId) == idp, "MessageId %s", aws.ToString(m.MessageId))
		return m
	}

	return []sqscore.Step{
		{"create-queue", func() error {
			r, err := c.CreateQueue(ctx, &sqs.CreateQueueInput{
				QueueName:  aws.String(mainQ),
				Attributes: attributes,
				Tags:       map[string]string{"team": "compat", "tier": "test"},
			})
			sqscore.Must(err)
			url = aws.ToString(r.QueueUrl)
			sqscore.Check(strings.HasSuffix(url, "/"+sqscore.Account+"/"+mainQ), "queue URL %s", url)
			return nil
		}},
		{"create-queue-idempotent", func() error {
			r, err := c.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String(mainQ), Attributes: attributes})
			sqscore.Must(err)
			sqscore.Check(aws.ToString(r.QueueUrl) == url, "second create answered %s", aws.ToString(r.QueueUrl))
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
			sqscore.Must(err)
			sqscore.Check(aws.ToString(r.QueueUrl) == url, "GetQueueUrl answered %s", aws.ToString(r.QueueUrl))
			return nil
		}},
		{"get-queue-url-missing", func() error {
			_, err := c.GetQueueUrl(ctx, &sqs.GetQueueUrlInput{QueueName: aws.String(missingQ)})
			expectError(err, "AWS.SimpleQueueService.NonExistentQueue", "QueueDoesNotExist")
			return nil
		}},
		{"list-queues", func() error {
			r, err := c.ListQueues(ctx, &sqs.ListQueuesInput{QueueNamePrefix: aws.String(prefix)})
			sqscore.Must(err)
			urls := r.QueueUrls
			sqscore.Check(reflect.DeepEqual(urls, []string{url}), "ListQueues answered %s", sqscore.Show(urls))
			return nil
		}},
		{"set-queue-attributes", func() error {
			_, err := c.SetQueueAttributes(ctx, &sqs.SetQueueAttributesInput{
				QueueUrl:   aws.String(url),
				Attributes: map[string]string{"VisibilityTimeout": "20"},
			})
			sqscore.Must(err)
			return nil
		}},
		{"get-queue-attributes", func() error {
			r, err := c.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{
				QueueUrl: aws.String(url), AttributeNames: []types.QueueAttributeName{"All"},
			})
			sqscore.Must(err)
			got := r.Attributes
			want := map[string]string{
				"VisibilityTimeout":           "20",
				"MessageRetentionPeriod":      "86400",
				"DelaySeconds":                "0",
				"QueueArn":                    sqscore.ARN(mainQ),
				"ApproximateNumberOfMessages": "0",
			}
			wrong := map[string]string{}
			for k, v := range want {
				if got[k] != v {
					wrong[k] = got[k]
				}
			}
			sqscore.Check(len(wrong) == 0, "attributes differ: %s", sqscore.Show(wrong))
			return nil
		}},
		{"tag-queue", func() error {
			_, err := c.TagQueue(ctx, &sqs.TagQueueInput{
				QueueUrl: aws.String(url), Tags: map[string]string{"stage": "replay"},
			})
			sqscore.Must(err)
			return nil
		}},
		{"list-queue-tags", func() error {
			r, err := c.ListQueueTags(ctx, &sqs.ListQueueTagsInput{QueueUrl: aws.String(url)})
			sqscore.Must(err)
			tags := r.Tags
			want := map[string]string{"team": "compat", "tier": "test", "stage": "replay"}
			sqscore.Check(reflect.DeepEqual(tags, want), "tags %s", sqscore.Show(tags))
			return nil
		}},
		{"untag-queue", func() error {
			_, err := c.UntagQueue(ctx, &sqs.UntagQueueInput{
				QueueUrl: aws.String(url), TagKeys: []string{"tier"},
			})
			sqscore.Must(err)
			return nil
		}},
		{"list-queue-tags-after-untag", func() error {
			r, err := c.ListQueueTags(ctx, &sqs.ListQueueTagsInput{QueueUrl: aws.String(url)})
			sqscore.Must(err)
			tags := r.Tags
			want := map[string]string{"team": "compat", "stage": "replay"}
			sqscore.Check(reflect.DeepEqual(tags, want), "tags %s", sqscore.Show(tags))
			return nil
		}},
		{"send-message", func() error {
			// The SDK itself checks MD5OfMessageBody; MD5OfMessageAttributes is checked here.
			r, err := c.SendMessage(ctx, &sqs.SendMessageInput{
				QueueUrl:          aws.String(url),
				MessageBody:       aws.String(sqscore.Body1),
				MessageAttributes: attrs1,
				// DelaySeconds 0: this SDK never sends a zero; 0 is the default.
			})
			sqscore.Must(err)
			id1, md5Attrs1 = aws.ToString(r.MessageId), aws.ToString(r.MD5OfMessageAttributes)
			sqscore.Check(id1 != "", "no MessageId")
			sqscore.Check(aws.ToString(r.MD5OfMessageBody) == sqscore.MD5Hex([]byte(sqscore.Body1)), "MD5OfMessageBody %s", aws.ToString(r.MD5OfMessageBody))
			sqscore.Check(sqscore.HexMD5.MatchString(md5Attrs1), "MD5OfMessageAttributes %q", md5Attrs1)
			want := sqscore.MD5OfAttributes(plainAttrs(attrs1))
			sqscore.Check(md5Attrs1 == want, "MD5OfMessageAttributes %s, computed %s", md5Attrs1, want)
			return nil
		}},
		{"send-message-delayed", func() error {
			r, err := c.SendMessage(ctx, &sqs.SendMessageInput{
				QueueUrl: aws.String(url), MessageBody: aws.String("sqs-core delayed"), DelaySeconds: int32(900),
			})
			sqscore.Must(err)
			sqscore.Check(aws.ToString(r.MessageId) != "", "no MessageId")
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
			sqscore.Must(err)
			sqscore.Check(reflect.DeepEqual(ids(r.Successful), sqscore.Set("b1", "b2")), "Successful %s", sqscore.Show(r.Successful))
			sqscore.Check(len(r.Failed) == 0, "Failed %s", sqscore.Show(r.Failed))
			bodies := map[string]string{"b1": "sqs-core batch one", "b2": "sqs-core batch two"}
			for _, e := range r.Successful {
				sqscore.Check(aws.ToString(e.MD5OfMessageBody) == sqscore.MD5Hex([]byte(bodies[aws.ToString(e.Id)])), "MD5 of %s", sqscore.Show(e))
				if aws.ToString(e.Id) == "b2" {
					sqscore.Check(aws.ToString(e.MD5OfMessageAttributes) == sqscore.MD5OfAttributes(plainAttrs(batchAttrs)), "MD5OfMessageAttributes of %s", sqscore.Show(e))
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
			sqscore.Must(err)
			byBody := map[string]types.Message{}
			bodies := []string{}
			for _, m := range r.Messages {
				byBody[aws.ToString(m.Body)] = m
				bodies = append(bodies, aws.ToString(m.Body))
			}
			sort.Strings(bodies)
			want := sqscore.Set(sqscore.Body1, "sqs-core batch one", "sqs-core batch two")
			sqscore.Check(len(r.Messages) == 3 && reflect.DeepEqual(sqscore.Set(bodies...), want), "received %s", sqscore.Show(bodies))
			m1 := byBody[sqscore.Body1]
			sqscore.Check(aws.ToString(m1.MessageId) == id1, "MessageId %s != %s", aws.ToString(m1.MessageId), id1)
			sqscore.Check(sqscore.SameAttributes(plainAttrs(m1.MessageAttributes), plainAttrs(attrs1)), "MessageAttributes %s", sqscore.Show(m1.MessageAttributes))
			sqscore.Check(aws.ToString(m1.MD5OfBody) == sqscore.MD5Hex([]byte(sqscore.Body1)), "MD5OfBody %s", aws.ToString(m1.MD5OfBody))
			sqscore.Check(aws.ToString(m1.MD5OfMessageAttributes) == md5Attrs1, "MD5OfMessageAttributes %s", aws.ToString(m1.MD5OfMessageAttributes))
			system := m1.Attributes
			sqscore.Check(system["ApproximateReceiveCount"] == "1", "Attributes %s", sqscore.Show(system))
			sqscore.Check(sqscore.Digits.MatchString(system["SentTimestamp"]), "SentTimestamp in %s", sqscore.Show(system))
			h1 = aws.ToString(m1.ReceiptHandle)
			hb1 = aws.ToString(byBody["sqs-core batch one"].ReceiptHandle)
			hb2 = aws.ToString(byBody["sqs-core batch two"].ReceiptHandle)
			return nil
		}},
		{"change-message-visibility", func() error {
			_, err := c.ChangeMessageVisibility(ctx, &sqs.ChangeMessageVisibilityInput{
				QueueUrl: aws.String(url), ReceiptHandle: aws.String(h1), VisibilityTimeout: int32(60),
			})
			sqscore.Must(err)
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
			sqscore.Must(err)
			sqscore.Check(reflect.DeepEqual(ids(r.Successful), sqscore.Set("c1", "c2")), "Successful %s", sqscore.Show(r.Successful))
			sqscore.Check(len(r.Failed) == 0, "Failed %s", sqscore.Show(r.Failed))
			return nil
		}},
		{"delete-message", func() error {
			_, err := c.DeleteMessage(ctx, &sqs.DeleteMessageInput{QueueUrl: aws.String(url), ReceiptHandle: aws.String(h1)})
			sqscore.Must(err)
			return nil
		}},
		{"delete-message-invalid-handle", func() error {
			_, err := c.DeleteMessage(ctx, &sqs.DeleteMessageInput{QueueUrl: aws.String(url), ReceiptHandle: aws.String(sqscore.BadHandle)})
			expectError(err, "ReceiptHandleIsInvalid")
			return nil
		}},
		{"delete-message-batch-partial", func() error {
			r, err := c.DeleteMessageBatch(ctx, &sqs.DeleteMessageBatchInput{
				QueueUrl: aws.String(url),
				Entries: []types.DeleteMessageBatchRequestEntry{
					{Id: aws.String("d1"), ReceiptHandle: aws.String(hb1)},
					{Id: aws.String("d2"), ReceiptHandle: aws.String(sqscore.BadHandle)},
				},
			})
			sqscore.Must(err)
			sqscore.Check(reflect.DeepEqual(ids(r.Successful), sqscore.Set("d1")), "Successful %s", sqscore.Show(r.Successful))
			f := r.Failed
			sqscore.Check(len(f) == 1 &&
				aws.ToString(f[0].Id) == "d2" &&
				aws.ToString(f[0].Code) == "ReceiptHandleIsInvalid" &&
				f[0].SenderFault, "Failed %s", sqscore.Show(f))
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
			sqscore.Must(err)
			got := r.Attributes
			counts := []string{got[names[0]], got[names[1]], got[names[2]]}
			sqscore.Check(reflect.DeepEqual(counts, []string{"0", "1", "1"}), "counts %s", sqscore.Show(got))
			return nil
		}},
		{"purge-queue", func() error {
			_, err := c.PurgeQueue(ctx, &sqs.PurgeQueueInput{QueueUrl: aws.String(url)})
			sqscore.Must(err)
			return nil
		}},
		{"receive-after-purge", func() error {
			r, err := c.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{
				QueueUrl: aws.String(url), MaxNumberOfMessages: int32(10), // WaitTimeSeconds 0: the default
			})
			sqscore.Must(err)
			sqscore.Check(len(r.Messages) == 0, "received %s", sqscore.Show(r.Messages))
			return nil
		}},
		{"create-dead-letter-queue", func() error {
			r, err := c.CreateQueue(ctx, &sqs.CreateQueueInput{
				QueueName: aws.String(deadQ),
				// VisibilityTimeout "0": this SDK cannot send ReceiveMessage's VisibilityTimeout 0.
				Attributes: map[string]string{"VisibilityTimeout": "0"},
			})
			sqscore.Must(err)
			deadURL = aws.ToString(r.QueueUrl)
			sqscore.Check(strings.HasSuffix(deadURL, "/"+sqscore.Account+"/"+deadQ), "queue URL %s", deadURL)
			return nil
		}},
		{"create-redrive-queue", func() error {
			policy := `{"deadLetterTargetArn":"` + sqscore.ARN(deadQ) + `","maxReceiveCount":"1"}`
			r, err := c.CreateQueue(ctx, &sqs.CreateQueueInput{
				QueueName: aws.String(retryQ),
				// VisibilityTimeout "0": this SDK cannot send ReceiveMessage's VisibilityTimeout 0.
				Attributes: map[string]string{"RedrivePolicy": policy, "VisibilityTimeout": "0"},
			})
			sqscore.Must(err)
			retryURL = aws.ToString(r.QueueUrl)
			sqscore.Check(strings.HasSuffix(retryURL, "/"+sqscore.Account+"/"+retryQ), "queue URL %s", retryURL)
			return nil
		}},
		{"send-poison", func() error {
			r, err := c.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(retryURL), MessageBody: aws.String("sqs-core poison")})
			sqscore.Must(err)
			idp = aws.ToString(r.MessageId)
			sqscore.Check(idp != "", "no MessageId")
			return nil
		}},
		{"receive-poison", func() error {
			m := receivePoison(retryURL, "ApproximateReceiveCount")
			count := m.Attributes["ApproximateReceiveCount"]
			sqscore.Check(count == "1", "ApproximateReceiveCount %s", count)
			return nil
		}},
		{"receive-poison-again", func() error {
			r, err := c.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(retryURL)}) // WaitTimeSeconds 0
			sqscore.Must(err)
			sqscore.Check(len(r.Messages) == 0, "received %s", sqscore.Show(r.Messages))
			return nil
		}},
		{"receive-dead-letter", func() error {
			m := receivePoison(deadURL, "All")
			sqscore.Check(aws.ToString(m.Body) == "sqs-core poison", "Body %s", aws.ToString(m.Body))
			return nil
		}},
		{"list-dead-letter-source-queues", func() error {
			r, err := c.ListDeadLetterSourceQueues(ctx, &sqs.ListDeadLetterSourceQueuesInput{QueueUrl: aws.String(deadURL)})
			sqscore.Must(err)
			urls := r.QueueUrls
			sqscore.Check(reflect.DeepEqual(urls, []string{retryURL}), "queueUrls %s", sqscore.Show(urls))
			return nil
		}},
		{"send-dead-letter-direct", func() error {
			r, err := c.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(deadURL), MessageBody: aws.String("sqs-core poison")})
			sqscore.Must(err)
			sqscore.Check(aws.ToString(r.MessageId) != "", "no MessageId")
			return nil
		}},
		{"start-message-move-task", func() error { return sqscore.ErrSkipped }},
		{"list-message-move-tasks", func() error { return sqscore.ErrSkipped }},
		{"cancel-message-move-task", func() error { return sqscore.ErrSkipped }},
		{"receive-moved", func() error {
			// No task ran (steps 36-38), so nothing moved: RETRY stays empty for the whole wait.
			r, err := c.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{
				QueueUrl: aws.String(retryURL), MaxNumberOfMessages: int32(10), WaitTimeSeconds: int32(5),
			})
			sqscore.Must(err)
			sqscore.Check(len(r.Messages) == 0, "received %s", sqscore.Show(r.Messages))
			return nil
		}},
		{"receive-not-moved", func() error {
			// No task ran, so DEAD still holds both of its visible messages (steps 33 and 35).
			r, err := c.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{
				QueueUrl: aws.String(deadURL), MaxNumberOfMessages: int32(10), WaitTimeSeconds: int32(5),
			})
			sqscore.Must(err)
			sqscore.Check(len(r.Messages) == 2, "received %d messages", len(r.Messages))
			for _, m := range r.Messages {
				sqscore.Check(aws.ToString(m.Body) == "sqs-core poison", "Body %s", aws.ToString(m.Body))
			}
			return nil
		}},
		{"delete-queues", func() error {
			for _, u := range []string{url, retryURL, deadURL} {
				_, err := c.DeleteQueue(ctx, &sqs.DeleteQueueInput{QueueUrl: aws.String(u)})
				sqscore.Must(err)
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
			sqscore.Must(err)
			sqscore.Check(len(r.QueueUrls) == 0, "ListQueues answered %s", sqscore.Show(r.QueueUrls))
			return nil
		}},
	}
}

// fifoSteps is the sqs-fifo step list. This SDK release's ReceiveMessage has no
// MessageSystemAttributeNames; its AttributeNames asks for the same system attributes. A zero
// WaitTimeSeconds is left out (this SDK never sends one; 0 is the queue's default).
func fifoSteps(ctx context.Context, c *sqs.Client, prefix string) []sqscore.Step {
	mainQ, deadQ := prefix+"fifo-main.fifo", prefix+"fifo-dead.fifo"
	var url, deadURL, idA1, seqA1, seqB1, seqA2, idB2, seqB2, seqA3, seqB3, hA1 string
	var hA, hB []string

	sendTo := func(queueURL, body, group, dedup string, delay int32) (*sqs.SendMessageOutput, error) {
		in := &sqs.SendMessageInput{QueueUrl: aws.String(queueURL), MessageBody: aws.String(body)}
		if group != "" {
			in.MessageGroupId = aws.String(group)
		}
		if dedup != "" {
			in.MessageDeduplicationId = aws.String(dedup)
		}
		in.DelaySeconds = delay // a zero is not sent
		return c.SendMessage(ctx, in)
	}
	// sent checks a send's answer and returns its MessageId and SequenceNumber, the latter after
	// after (when not empty).
	sent := func(id, md5, number *string, body, after string) (string, string) {
		sqscore.Check(aws.ToString(id) != "", "no MessageId")
		sqscore.Check(aws.ToString(md5) == sqscore.MD5Hex([]byte(body)), "MD5OfMessageBody %s", aws.ToString(md5))
		return aws.ToString(id), sqscore.Sequence(aws.ToString(number), after)
	}
	send := func(body, group, dedup, after string) (string, string) {
		r, err := sendTo(url, body, group, dedup, 0)
		sqscore.Must(err)
		return sent(r.MessageId, r.MD5OfMessageBody, r.SequenceNumber, body, after)
	}
	receive := func(in *sqs.ReceiveMessageInput) []types.Message {
		in.QueueUrl = aws.String(url)
		r, err := c.ReceiveMessage(ctx, in)
		sqscore.Must(err)
		return r.Messages
	}
	bodies := func(messages []types.Message) []string {
		out := []string{}
		for _, m := range messages {
			out = append(out, aws.ToString(m.Body))
		}
		return out
	}
	handles := func(messages []types.Message) []string {
		out := []string{}
		for _, m := range messages {
			out = append(out, aws.ToString(m.ReceiptHandle))
		}
		return out
	}
	attributes := func(m types.Message, names ...string) []string {
		out := []string{}
		for _, n := range names {
			out = append(out, m.Attributes[n])
		}
		return out
	}
	fifoBodies := func(names ...string) []string {
		out := []string{}
		for _, n := range names {
			out = append(out, sqscore.FifoBody(n))
		}
		return out
	}

	return []sqscore.Step{
		{"create-dead-letter-queue", func() error {
			r, err := c.CreateQueue(ctx, &sqs.CreateQueueInput{
				QueueName: aws.String(deadQ), Attributes: map[string]string{"FifoQueue": "true"},
			})
			sqscore.Must(err)
			deadURL = aws.ToString(r.QueueUrl)
			sqscore.Check(strings.HasSuffix(deadURL, "/"+sqscore.Account+"/"+deadQ), "queue URL %s", deadURL)
			return nil
		}},
		{"create-queue", func() error {
			r, err := c.CreateQueue(ctx, &sqs.CreateQueueInput{
				QueueName: aws.String(mainQ), Attributes: sqscore.FifoAttributes(deadQ),
			})
			sqscore.Must(err)
			url = aws.ToString(r.QueueUrl)
			sqscore.Check(strings.HasSuffix(url, "/"+sqscore.Account+"/"+mainQ), "queue URL %s", url)
			return nil
		}},
		{"get-queue-attributes", func() error {
			r, err := c.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{
				QueueUrl: aws.String(url), AttributeNames: []types.QueueAttributeName{"All"},
			})
			sqscore.Must(err)
			got := r.Attributes
			want := map[string]string{
				"FifoQueue":                 "true",
				"ContentBasedDeduplication": "true",
				"DeduplicationScope":        "messageGroup",
				"FifoThroughputLimit":       "perMessageGroupId",
				"VisibilityTimeout":         "30",
				"QueueArn":                  sqscore.ARN(mainQ),
			}
			wrong := map[string]string{}
			for k, v := range want {
				if got[k] != v {
					wrong[k] = got[k]
				}
			}
			sqscore.Check(len(wrong) == 0, "attributes differ: %s", sqscore.Show(wrong))
			sqscore.CheckRedrivePolicy(got["RedrivePolicy"], deadQ)
			return nil
		}},
		{"get-dead-letter-queue-attributes", func() error {
			r, err := c.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{
				QueueUrl: aws.String(deadURL), AttributeNames: attributeNames(sqscore.FifoNames),
			})
			sqscore.Must(err)
			got := r.Attributes
			want := map[string]string{
				"FifoQueue":                 "true",
				"ContentBasedDeduplication": "false",
				"DeduplicationScope":        "queue",
				"FifoThroughputLimit":       "perQueue",
			}
			sqscore.Check(reflect.DeepEqual(got, want), "attributes %s", sqscore.Show(got))
			return nil
		}},
		{"send-message-a1", func() error {
			idA1, seqA1 = send(sqscore.FifoBody("a1"), "a", "a1", "")
			return nil
		}},
		{"send-message-b1", func() error {
			_, seqB1 = send(sqscore.FifoBody("b1"), "b", "b1", seqA1)
			return nil
		}},
		{"send-message-a2", func() error {
			_, seqA2 = send(sqscore.FifoBody("a2"), "a", "a2", seqB1)
			return nil
		}},
		{"send-message-duplicate", func() error {
			r, err := sendTo(url, sqscore.FifoBody("a1"), "a", "a1", 0)
			sqscore.Must(err)
			sqscore.Check(aws.ToString(r.MessageId) == idA1, "MessageId %s != %s", aws.ToString(r.MessageId), idA1)
			return nil
		}},
		{"send-message-content-based", func() error {
			idB2, seqB2 = send(sqscore.FifoBody("b2"), "b", "", seqA2)
			return nil
		}},
		{"send-message-content-duplicate", func() error {
			r, err := sendTo(url, sqscore.FifoBody("b2"), "b", "", 0)
			sqscore.Must(err)
			sqscore.Check(aws.ToString(r.MessageId) == idB2, "MessageId %s != %s", aws.ToString(r.MessageId), idB2)
			return nil
		}},
		{"send-message-batch", func() error {
			entries := []types.SendMessageBatchRequestEntry{}
			for _, x := range []string{"a3", "b3"} {
				entries = append(entries, types.SendMessageBatchRequestEntry{
					Id:                     aws.String(x),
					MessageBody:            aws.String(sqscore.FifoBody(x)),
					MessageGroupId:         aws.String(x[:1]),
					MessageDeduplicationId: aws.String(x),
				})
			}
			r, err := c.SendMessageBatch(ctx, &sqs.SendMessageBatchInput{QueueUrl: aws.String(url), Entries: entries})
			sqscore.Must(err)
			sqscore.Check(reflect.DeepEqual(ids(r.Successful), sqscore.Set("a3", "b3")), "Successful %s", sqscore.Show(r.Successful))
			sqscore.Check(len(r.Failed) == 0, "Failed %s", sqscore.Show(r.Failed))
			byID := map[string]types.SendMessageBatchResultEntry{}
			for _, e := range r.Successful {
				byID[aws.ToString(e.Id)] = e
			}
			a3, b3 := byID["a3"], byID["b3"]
			_, seqA3 = sent(a3.MessageId, a3.MD5OfMessageBody, a3.SequenceNumber, sqscore.FifoBody("a3"), seqB2)
			_, seqB3 = sent(b3.MessageId, b3.MD5OfMessageBody, b3.SequenceNumber, sqscore.FifoBody("b3"), seqA3)
			return nil
		}},
		{"receive-first", func() error {
			messages := receive(&sqs.ReceiveMessageInput{
				AttributeNames:      []types.QueueAttributeName{"All"},
				MaxNumberOfMessages: int32(1),
				WaitTimeSeconds:     int32(5),
			})
			sqscore.Check(len(messages) == 1, "received %d messages", len(messages))
			m := messages[0]
			sqscore.Check(aws.ToString(m.Body) == sqscore.FifoBody("a1"), "Body %s", aws.ToString(m.Body))
			sqscore.Check(aws.ToString(m.MessageId) == idA1, "MessageId %s", aws.ToString(m.MessageId))
			got := attributes(m, "MessageGroupId", "MessageDeduplicationId", "SequenceNumber", "ApproximateReceiveCount")
			sqscore.Check(reflect.DeepEqual(got, []string{"a", "a1", seqA1, "1"}), "Attributes %s", sqscore.Show(m.Attributes))
			hA1 = aws.ToString(m.ReceiptHandle)
			return nil
		}},
		{"receive-other-group", func() error {
			messages := receive(&sqs.ReceiveMessageInput{
				AttributeNames:          []types.QueueAttributeName{"All"},
				MaxNumberOfMessages:     int32(10),
				WaitTimeSeconds:         int32(5),
				ReceiveRequestAttemptId: aws.String(sqscore.Attempt),
			})
			got := bodies(messages)
			sqscore.Check(reflect.DeepEqual(got, fifoBodies("b1", "b2", "b3")), "received %s", sqscore.Show(got))
			want := [][]string{
				{"b", "b1", seqB1},
				{"b", sqscore.SHA256Hex([]byte(sqscore.FifoBody("b2"))), seqB2},
				{"b", "b3", seqB3},
			}
			for i, m := range messages {
				a := attributes(m, "MessageGroupId", "MessageDeduplicationId", "SequenceNumber")
				sqscore.Check(reflect.DeepEqual(a, want[i]), "Attributes of %s: %s", aws.ToString(m.Body), sqscore.Show(a))
			}
			hB = handles(messages)
			return nil
		}},
		{"receive-retry-attempt", func() error {
			messages := receive(&sqs.ReceiveMessageInput{
				AttributeNames:          []types.QueueAttributeName{"All"},
				MaxNumberOfMessages:     int32(10),
				WaitTimeSeconds:         int32(5),
				ReceiveRequestAttemptId: aws.String(sqscore.Attempt),
			})
			got := handles(messages)
			sqscore.Check(reflect.DeepEqual(got, hB), "receipt handles %s != %s", sqscore.Show(got), sqscore.Show(hB))
			sqscore.Check(reflect.DeepEqual(bodies(messages), fifoBodies("b1", "b2", "b3")), "received %s", sqscore.Show(bodies(messages)))
			return nil
		}},
		{"receive-held-group", func() error {
			messages := receive(&sqs.ReceiveMessageInput{MaxNumberOfMessages: int32(10)}) // WaitTimeSeconds 0
			sqscore.Check(len(messages) == 0, "received %s", sqscore.Show(bodies(messages)))
			return nil
		}},
		{"delete-message", func() error {
			_, err := c.DeleteMessage(ctx, &sqs.DeleteMessageInput{QueueUrl: aws.String(url), ReceiptHandle: aws.String(hA1)})
			sqscore.Must(err)
			return nil
		}},
		{"receive-next-in-group", func() error {
			messages := receive(&sqs.ReceiveMessageInput{
				AttributeNames:      []types.QueueAttributeName{"MessageGroupId", "SequenceNumber"},
				MaxNumberOfMessages: int32(10),
				WaitTimeSeconds:     int32(5),
			})
			got := bodies(messages)
			sqscore.Check(reflect.DeepEqual(got, fifoBodies("a2", "a3")), "received %s", sqscore.Show(got))
			for i, seq := range []string{seqA2, seqA3} {
				a := messages[i].Attributes
				want := map[string]string{"MessageGroupId": "a", "SequenceNumber": seq}
				sqscore.Check(reflect.DeepEqual(a, want), "Attributes of %s: %s", got[i], sqscore.Show(a))
			}
			hA = handles(messages)
			return nil
		}},
		{"delete-message-batch", func() error {
			names := []string{"a2", "a3", "b1", "b2", "b3"}
			all := append(append([]string{}, hA...), hB...)
			entries := []types.DeleteMessageBatchRequestEntry{}
			for i, n := range names {
				entries = append(entries, types.DeleteMessageBatchRequestEntry{Id: aws.String(n), ReceiptHandle: aws.String(all[i])})
			}
			r, err := c.DeleteMessageBatch(ctx, &sqs.DeleteMessageBatchInput{QueueUrl: aws.String(url), Entries: entries})
			sqscore.Must(err)
			sqscore.Check(reflect.DeepEqual(ids(r.Successful), sqscore.Set(names...)), "Successful %s", sqscore.Show(r.Successful))
			sqscore.Check(len(r.Failed) == 0, "Failed %s", sqscore.Show(r.Failed))
			return nil
		}},
		{"receive-empty", func() error {
			messages := receive(&sqs.ReceiveMessageInput{MaxNumberOfMessages: int32(10)}) // WaitTimeSeconds 0
			sqscore.Check(len(messages) == 0, "received %s", sqscore.Show(bodies(messages)))
			return nil
		}},
		{"send-message-missing-group", func() error {
			_, err := sendTo(url, sqscore.FifoBody("x"), "", "x1", 0)
			expectError(err, "MissingParameter", "MissingRequiredParameterException")
			return nil
		}},
		{"send-message-missing-deduplication-id", func() error {
			_, err := sendTo(deadURL, sqscore.FifoBody("x"), "x", "", 0)
			expectError(err, "InvalidParameterValue", "InvalidParameterValueException")
			return nil
		}},
		{"send-message-delay", func() error {
			_, err := sendTo(url, sqscore.FifoBody("x"), "x", "x2", 5)
			expectError(err, "InvalidParameterValue", "InvalidParameterValueException")
			return nil
		}},
		{"create-queue-fifo-name-only", func() error {
			_, err := c.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String(prefix + "fifo-plain.fifo")})
			expectError(err, "InvalidParameterValue", "InvalidParameterValueException")
			return nil
		}},
		{"create-queue-fifo-attribute-only", func() error {
			_, err := c.CreateQueue(ctx, &sqs.CreateQueueInput{
				QueueName: aws.String(prefix + "fifo-plain"), Attributes: map[string]string{"FifoQueue": "true"},
			})
			expectError(err, "InvalidParameterValue", "InvalidParameterValueException")
			return nil
		}},
		{"delete-queues", func() error {
			for _, u := range []string{url, deadURL} {
				_, err := c.DeleteQueue(ctx, &sqs.DeleteQueueInput{QueueUrl: aws.String(u)})
				sqscore.Must(err)
			}
			return nil
		}},
		{"list-queues-empty", func() error {
			r, err := c.ListQueues(ctx, &sqs.ListQueuesInput{QueueNamePrefix: aws.String(prefix + "fifo-")})
			sqscore.Must(err)
			sqscore.Check(len(r.QueueUrls) == 0, "ListQueues answered %s", sqscore.Show(r.QueueUrls))
			return nil
		}},
	}
}
