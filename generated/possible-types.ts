/* eslint-disable */
// Written by graphql-codegen from schema/*.graphql. Do not edit; run `npm run codegen`.

      export type PossibleTypesResultData = {
  "possibleTypes": {
    "BaseMessageOutput": [
      "ActionExecutionMessageOutput",
      "AgentStateMessageOutput",
      "ImageMessageOutput",
      "ResultMessageOutput",
      "TextMessageOutput"
    ],
    "BaseMetaEvent": [
      "CopilotKitLangGraphInterruptEvent",
      "LangGraphInterruptEvent"
    ],
    "BaseResponseStatus": [
      "FailedResponseStatus",
      "PendingResponseStatus",
      "SuccessResponseStatus"
    ],
    "CopilotRunEvent": [
      "ActionExecutionArgsEvent",
      "ActionExecutionEndEvent",
      "ActionExecutionResultEvent",
      "ActionExecutionStartEvent",
      "AgentStateMessageEvent",
      "ReasoningContentEvent",
      "ReasoningEndEvent",
      "ReasoningStartEvent",
      "RunFinishedEvent",
      "RunMetaEvent",
      "RunStartedEvent",
      "TextMessageContentEvent",
      "TextMessageEndEvent",
      "TextMessageStartEvent"
    ],
    "MessageStatus": [
      "FailedMessageStatus",
      "PendingMessageStatus",
      "SuccessMessageStatus"
    ],
    "ResponseStatus": [
      "FailedResponseStatus",
      "PendingResponseStatus",
      "SuccessResponseStatus"
    ],
    "RunEvent": [
      "ActionExecutionArgsEvent",
      "ActionExecutionEndEvent",
      "ActionExecutionResultEvent",
      "ActionExecutionStartEvent",
      "AgentStateMessageEvent",
      "ReasoningContentEvent",
      "ReasoningEndEvent",
      "ReasoningStartEvent",
      "RunFinishedEvent",
      "RunMetaEvent",
      "RunStartedEvent",
      "TextMessageContentEvent",
      "TextMessageEndEvent",
      "TextMessageStartEvent"
    ]
  }
};
      const result: PossibleTypesResultData = {
  "possibleTypes": {
    "BaseMessageOutput": [
      "ActionExecutionMessageOutput",
      "AgentStateMessageOutput",
      "ImageMessageOutput",
      "ResultMessageOutput",
      "TextMessageOutput"
    ],
    "BaseMetaEvent": [
      "CopilotKitLangGraphInterruptEvent",
      "LangGraphInterruptEvent"
    ],
    "BaseResponseStatus": [
      "FailedResponseStatus",
      "PendingResponseStatus",
      "SuccessResponseStatus"
    ],
    "CopilotRunEvent": [
      "ActionExecutionArgsEvent",
      "ActionExecutionEndEvent",
      "ActionExecutionResultEvent",
      "ActionExecutionStartEvent",
      "AgentStateMessageEvent",
      "ReasoningContentEvent",
      "ReasoningEndEvent",
      "ReasoningStartEvent",
      "RunFinishedEvent",
      "RunMetaEvent",
      "RunStartedEvent",
      "TextMessageContentEvent",
      "TextMessageEndEvent",
      "TextMessageStartEvent"
    ],
    "MessageStatus": [
      "FailedMessageStatus",
      "PendingMessageStatus",
      "SuccessMessageStatus"
    ],
    "ResponseStatus": [
      "FailedResponseStatus",
      "PendingResponseStatus",
      "SuccessResponseStatus"
    ],
    "RunEvent": [
      "ActionExecutionArgsEvent",
      "ActionExecutionEndEvent",
      "ActionExecutionResultEvent",
      "ActionExecutionStartEvent",
      "AgentStateMessageEvent",
      "ReasoningContentEvent",
      "ReasoningEndEvent",
      "ReasoningStartEvent",
      "RunFinishedEvent",
      "RunMetaEvent",
      "RunStartedEvent",
      "TextMessageContentEvent",
      "TextMessageEndEvent",
      "TextMessageStartEvent"
    ]
  }
};
      export default result;
    