// The SDK registration form (SDKRegistrationForm, FormEncoding, AdditionalParamsXML) is part of
// the wire protocol: every importer of CampaignProtocol sees it as before. It is a module of its
// own (Sources/CampaignProtocol/SDKForm) only so that RelayLog, which stores the forms the SDKs
// posted and reads them back, depends on the form and not on the rest of the protocol.
@_exported public import CampaignSDKForm
