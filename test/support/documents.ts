/** The copilotRun subscription the WebSocket tests send (test/ws.test.ts); test/subscribe.test.ts runs it too. */
export const WS_RUN = /* GraphQL */ `
  subscription Run($data: GenerateCopilotResponseInput!) {
    copilotRun(data: $data) {
      __typename
      ... on RunEvent {
        sequence
      }
      ... on RunStartedEvent {
        threadId
        runId
      }
      ... on TextMessageStartEvent {
        messageId
        role
      }
      ... on TextMessageContentEvent {
        messageId
        content
      }
      ... on TextMessageEndEvent {
        messageId
        messageStatus {
          __typename
          ... on FailedMessageStatus {
            reason
          }
        }
      }
      ... on ActionExecutionStartEvent {
        actionExecutionId
        actionName
      }
      ... on ActionExecutionArgsEvent {
        actionExecutionId
        args
      }
      ... on ActionExecutionEndEvent {
        actionExecutionId
        messageStatus {
          __typename
        }
      }
      ... on ActionExecutionResultEvent {
        messageId
        actionExecutionId
        actionName
        result
      }
      ... on RunFinishedEvent {
        status {
          __typename
          ... on FailedResponseStatus {
            reason
            details
          }
        }
      }
    }
  }
`;

/** generateCopilotResponse over HTTP with @defer (the status) and @stream (messages, their text). */
export const HTTP_STREAMED = /* GraphQL */ `
  mutation ($data: GenerateCopilotResponseInput!) {
    generateCopilotResponse(data: $data) {
      threadId
      ... on CopilotResponse @defer {
        status {
          ... on BaseResponseStatus {
            code
          }
          ... on FailedResponseStatus {
            reason
            details
          }
        }
      }
      messages @stream {
        id
        ... on TextMessageOutput {
          content @stream
        }
      }
    }
  }
`;
